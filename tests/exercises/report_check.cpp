// report_check REPORT NAME — checks the JSON `./lab check all --report` wrote in
// tests/exercises/lab_check.sh: the student's name (quotes and all), and per chapter the
// status, score, hint level, seed, SHA-256 and time the fake chapters there must have (five:
// passed, not yet, does not compile, a cheat that is not yet, a grader that crashed).
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: report_check REPORT NAME\n"), 2;
  nlohmann::json r;
  try {
    std::ifstream in(argv[1]);
    r = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::printf("not JSON: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", r.dump(2).c_str());
  int bad = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::printf("WRONG: %s\n", what), ++bad;
  };
  const std::regex iso("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z");
  expect(r.value("student", "") == argv[2], "student is the --name given");
  expect(std::regex_match(r.value("written_at", ""), iso), "written_at is an ISO 8601 UTC time");
  const auto& ch = r["chapters"];
  expect(ch.is_array() && ch.size() == 5, "five chapters");
  if (ch.is_array() && ch.size() == 5) {
    expect(ch[0]["chapter"] == "01" && ch[0]["passed"] == true && ch[0]["status"] == "passed", "01 passed");
    expect(ch[0]["score"].is_number() && ch[0]["score"] == ch[0]["of"] && ch[0]["of"] > 0, "01 scores y of y");
    expect(ch[0]["hint_level"] == 1, "01: hint level 1 (the last --hint asked for was 1)");
    expect(ch[0]["exercise"] == "the alpha exercise", "01: the exercise's title");
    const std::regex digits("[0-9]{1,20}"), sha256("[0-9a-f]{64}");
    expect(ch[0]["seed"].is_string() && std::regex_match(ch[0]["seed"].get<std::string>(), digits),
           "01: the seed its inputs were drawn from");
    expect(ch[0]["sha256"].is_string() && std::regex_match(ch[0]["sha256"].get<std::string>(), sha256),
           "01: the SHA-256 of the exercise.cpp graded");
    expect(ch[0]["refused"].is_null() && ch[0]["first_wrong"].is_null(), "01: neither refused nor wrong");
    expect(ch[1]["first_wrong"].is_string() && ch[1]["refused"].is_null(), "02: its first wrong check, not refused");
    expect(ch[1]["chapter"] == "02" && ch[1]["passed"] == false && ch[1]["status"] == "not yet", "02 not yet");
    expect(ch[1]["score"] == 0 && ch[1]["of"] > 0, "02 scores 0 of y");
    expect(ch[1]["hint_level"] == 2, "02: hint level 2");
    expect(ch[2]["status"] == "does not compile" && ch[2]["score"].is_null() && ch[2]["of"].is_null(),
           "03 does not compile, with no score");
    expect(ch[2]["hint_level"] == 0, "03: no hint used");
    expect(ch[2]["seed"].is_null() && ch[2]["sha256"].is_null(), "03: no seed, no SHA-256 (nothing was graded)");
    expect(ch[3]["status"] == "grader crashed" && ch[3]["passed"] == false && ch[3]["score"].is_null(),
           "05 (a grader that crashed): said so, with no score");
    expect(ch[4]["passed"] == false && ch[4]["status"] == "not yet" && ch[4]["score"] == 0 && ch[4]["of"] > 0,
           "12 (an exercise that printed PASS and wrote a result of its own): not yet, 0 of the grader's checks");
    for (const auto& c : ch) expect(std::regex_match(c.value("checked_at", ""), iso), "checked_at is ISO 8601");
  }
  std::printf(bad ? "%d problem(s) in the report\n" : "the report is right\n", bad);
  return bad ? 1 : 0;
}
