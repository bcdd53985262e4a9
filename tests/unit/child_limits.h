#pragma once
// Runs a piece of code in a child process under a memory limit and a time limit, so that a
// test can show "refused in well under a second and under 100 MB" — and so that code that
// would allocate gigabytes, or block forever on a FIFO, fails the test instead of taking the
// machine or the test run down with it.
//
//   const ChildResult r = run_limited([&] { hg::data::read_idx(path); }, 100 << 20, 10);
//   CHECK(r.outcome == ChildResult::Refused);   // threw std::runtime_error
//   CHECK(r.message.find(path) != std::string::npos);
//   CHECK(r.cpu_seconds < 1.0);
//
// Time is measured as the child's CPU time (user + system): on a machine shared by several
// builds the wall-clock time says more about the neighbours than about the code.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

struct ChildResult {
  enum Outcome { Accepted, Refused, OutOfMemory, OtherException, Killed } outcome = Killed;
  std::string message;  // what() of the exception, or how the child ended
  double cpu_seconds = 0;  // CPU time inside fn, measured by the child
};

// The child's address space now, from /proc/self/status (VmSize, kB).
inline size_t current_address_space() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return size_t(std::stoull(line.substr(7))) * 1024;
  return 0;
}

// fn runs with RLIMIT_AS = (address space at the start) + extra_bytes and is killed after
// alarm_seconds.
template <class Fn>
ChildResult run_limited(Fn fn, size_t extra_bytes, unsigned alarm_seconds) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = current_address_space() + extra_bytes;
    ::setrlimit(RLIMIT_AS, &lim);
    ::alarm(alarm_seconds);
    int code = 0;
    std::string msg;
    const std::clock_t t0 = std::clock();
    try {
      fn();
      code = ChildResult::Accepted;
    } catch (const std::runtime_error& e) {
      code = ChildResult::Refused, msg = e.what();
    } catch (const std::bad_alloc&) {
      code = ChildResult::OutOfMemory, msg = "std::bad_alloc";
    } catch (const std::exception& e) {
      code = ChildResult::OtherException, msg = e.what();
    }
    const double s = double(std::clock() - t0) / CLOCKS_PER_SEC;
    const std::string out = std::to_string(s) + "\n" + msg;
    if (::write(fds[1], out.data(), out.size())) {}
    ::_exit(code);  // no destructors, no doctest reporting in the child
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(k));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ChildResult r;
  if (WIFEXITED(status) && WEXITSTATUS(status) <= ChildResult::OtherException) {
    r.outcome = ChildResult::Outcome(WEXITSTATUS(status));
    const size_t nl = out.find('\n');
    r.cpu_seconds = std::stod(out.substr(0, nl));
    r.message = out.substr(nl + 1);
  } else {
    r.outcome = ChildResult::Killed;
    r.message = WIFSIGNALED(status) ? std::string("killed by signal ") + strsignal(WTERMSIG(status))
                                    : "exited with " + std::to_string(WEXITSTATUS(status));
  }
  return r;
}

inline std::string outcome_name(ChildResult::Outcome o) {
  switch (o) {
    case ChildResult::Accepted: return "accepted";
    case ChildResult::Refused: return "refused";
    case ChildResult::OutOfMemory: return "out of memory";
    case ChildResult::OtherException: return "another exception";
    case ChildResult::Killed: return "killed";
  }
  return "?";
}
