// lessons/grader/child.cpp — running the learner's code in a child process (grader.h, "The
// learner's code runs only in a child"), and the bytes that bring its answer back.
//
//   1. fork           the child is a copy of the grader: the inputs are already in its memory
//   2. shut the doors stdin from /dev/null, every other file descriptor closed but the pipe,
//                     the environment emptied (getenv finds nothing: no answer comes in by
//                     an environment variable), the child killed when the grader dies, the
//                     limits set (address space, processor time), then the sandbox: a
//                     seccomp filter that allows what
//                     computing, allocating, printing and OpenMP threads need, and stops
//                     everything else with SIGSYS, whose handler names the call on the pipe
//   3. run            the body: the learner's code, then put() of its result
//   4. answer         one message on the pipe: a tag, whether the sandbox was on, the bytes
//   5. collect        the grader reads the pipe until the child closes it, within the time
//                     limit (then SIGKILL), and turns how the child ended into words
//
// The message: 'V' value | 'E' an exception (its what()) | 'M' out of memory | 'S' a system
// call the sandbox stopped (its number); then one byte, 1 when the sandbox was on; then the
// payload. Anything else on the pipe (the learner's code can write to it too) fails the
// check: the answer is read, never trusted to say whether it is right.
#include <fcntl.h>
#include <omp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "lessons/grader/grader.h"

#if defined(__x86_64__) || defined(__aarch64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#define HG_GRADER_SANDBOX 1
#endif

namespace grader {

// ---- the bytes ---------------------------------------------------------------------------

namespace wire {

void Reader::read(void* to, size_t n) {
  if (n > bytes_.size() - at_)
    throw Failed("what exercise.cpp's code returned could not be read back: the grader's pipe "
                 "held something other than its answer");
  if (n) std::memcpy(to, bytes_.data() + at_, n);
  at_ += n;
}

void Reader::need(uint64_t count, size_t size) const {
  if (size != 0 && count > (bytes_.size() - at_) / size)
    throw Failed("what exercise.cpp's code returned could not be read back: the grader's pipe "
                 "held less than its answer");
}

void Reader::expect_end() const {
  if (at_ != bytes_.size())
    throw Failed("what exercise.cpp's code returned could not be read back: the grader's pipe "
                 "held more than its answer");
}

void get(Reader& in, bool& b) {
  unsigned char byte = 0;
  in.read(&byte, 1);
  b = byte != 0;
}

void put(std::string& out, const std::string& s) {
  put(out, uint64_t(s.size()));
  out += s;
}

void get(Reader& in, std::string& s) {
  uint64_t n = 0;
  get(in, n);
  in.need(n, 1);
  s.resize(size_t(n));
  in.read(s.data(), size_t(n));
}

// defined, dtype, requires_grad, shape, then the values row-major in the tensor's own dtype.
void put(std::string& out, const hg::Tensor& t) {
  put(out, t.defined());
  if (!t.defined()) return;
  const hg::Tensor c = t.to(hg::Device::CPU).contiguous();
  put(out, c.dtype());
  put(out, t.requires_grad());
  put(out, c.shape());
  out.append(static_cast<const char*>(c.raw_data()), c.nbytes());
}

void get(Reader& in, hg::Tensor& t) {
  bool defined = false;
  get(in, defined);
  t = hg::Tensor();
  if (!defined) return;
  hg::DType dtype{};
  bool requires_grad = false;
  hg::Shape shape;
  get(in, dtype);
  get(in, requires_grad);
  get(in, shape);
  if (int(dtype) < int(hg::DType::F32) || int(dtype) > int(hg::DType::F64))
    throw Failed("what exercise.cpp's code returned could not be read back: a tensor of no known dtype");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    in.need(d < 0 ? ~uint64_t(0) : uint64_t(d), 1);  // a negative size, or one larger than the bytes
    numel *= uint64_t(d);
    in.need(numel, hg::dtype_size(dtype));
  }
  t = hg::Tensor::empty(shape, dtype);
  in.read(t.raw_data(), t.nbytes());
  if (requires_grad) t.requires_grad_(true);
}

}  // namespace wire

namespace detail {

namespace {

constexpr char kValue = 'V', kThrew = 'E', kOutOfMemory = 'M', kForbidden = 'S';
constexpr int kForbiddenExit = 97;  // the SIGSYS handler's exit code
constexpr size_t kMostBytes = size_t(1) << 30;  // an answer larger than this is not read

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Threads of this process now (/proc/self/task): libgomp's threads do not survive a fork,
// and a child of a process that has them must not start a parallel region with more than
// one thread, or it waits forever for the threads that are not there.
int thread_count() {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n > 0 ? n : 1;
}

// The address space now (VmSize), for a memory limit on top of what the child inherits.
size_t address_space() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return size_t(std::stoull(line.substr(7))) * 1024;
  return 0;
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

// ---- the sandbox -------------------------------------------------------------------------

// The pipe the SIGSYS handler reports on. A signal handler has no other way to find it; it is
// set in the child only, once, before the filter is installed.
int g_report_fd = -1;

void on_forbidden_syscall(int, siginfo_t* info, void*) {
  char msg[2 + sizeof(int)] = {kForbidden, 1};
  const int nr = info->si_syscall;
  std::memcpy(msg + 2, &nr, sizeof nr);
  if (::write(g_report_fd, msg, sizeof msg)) {}
  ::_exit(kForbiddenExit);
}

#ifdef HG_GRADER_SANDBOX
#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#else
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#endif

// A seccomp program: a list of "if the call is X then return R" tests, in BPF.
class Filter {
 public:
  Filter() {
    load(offsetof(seccomp_data, arch));
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
    ret(SECCOMP_RET_KILL_PROCESS);  // another ABI (32-bit calls) is never allowed
    load_nr();
#if defined(__x86_64__)
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // the x32 ABI
    ret(SECCOMP_RET_KILL_PROCESS);
#endif
  }
  void allow(long nr) { answer(nr, SECCOMP_RET_ALLOW); }
  void fail(long nr, int error) { answer(nr, SECCOMP_RET_ERRNO | uint32_t(error)); }
  // Allowed when argument `arg` (its low 32 bits) has one of the bits of `mask`, else trapped.
  void allow_if_bits(long nr, int arg, uint32_t mask) {
    jump_unless(uint32_t(nr), 4);
    load(arg_offset(arg));
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_TRAP);
  }
  // `then` when argument `arg` (low 32 bits) equals `value`, else `otherwise`.
  void if_arg(long nr, int arg, uint32_t value, uint32_t then, uint32_t otherwise) {
    jump_unless(uint32_t(nr), 4);
    load(arg_offset(arg));
    jump_unless(value, 1);
    ret(then);
    ret(otherwise);
  }
  // Allowed when argument `arg` (all 64 bits) is 0, else trapped.
  void allow_if_zero(long nr, int arg) {
    jump_unless(uint32_t(nr), 6);
    load(arg_offset(arg));
    jump_unless(0, 3);
    load(arg_offset(arg) + 4);
    jump_unless(0, 1);
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_TRAP);
  }
  bool install() {
    ret(SECCOMP_RET_TRAP);  // everything not allowed above
    sock_fprog prog{static_cast<unsigned short>(code_.size()), code_.data()};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
  }

 private:
  static uint32_t arg_offset(int arg) { return uint32_t(offsetof(seccomp_data, args) + 8 * size_t(arg)); }
  void load(uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void load_nr() { load(offsetof(seccomp_data, nr)); }
  void ret(uint32_t r) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, r)); }
  // Skips the next `skip` instructions unless the accumulator equals `k`.
  void jump_unless(uint32_t k, uint8_t skip) { code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, skip)); }
  // The tests after this one start again from the call's number.
  void answer(long nr, uint32_t r) {
    jump_unless(uint32_t(nr), 1);
    ret(r);
  }
  std::vector<sock_filter> code_;
};
#endif

// What the learner's code may do: compute, allocate, print, time itself, and run threads
// (OpenMP, which halfgrad's ops and the sweeps use). Everything that reaches outside the
// process — files (open, stat, unlink, rename, mkdir), programs (execve, fork), the network,
// signals to other processes, ptrace, shared memory — is stopped. Looking a file up (stat)
// and ioctl fail with an error code instead, because the C library asks them on its own
// (isatty, fstat of stdout). Returns false where the system has no seccomp.
bool install_sandbox(int report_fd) {
#ifdef HG_GRADER_SANDBOX
  g_report_fd = report_fd;
  struct sigaction sa {};
  sa.sa_sigaction = on_forbidden_syscall;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0) return false;
  Filter f;
  for (long nr : {SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64, SYS_pwrite64, SYS_lseek, SYS_close,
                  SYS_fstat, SYS_fcntl, SYS_mmap, SYS_mprotect, SYS_munmap, SYS_brk, SYS_mremap, SYS_madvise,
                  SYS_mincore, SYS_msync, SYS_membarrier, SYS_rt_sigprocmask, SYS_rt_sigreturn,
                  SYS_sigaltstack, SYS_futex, SYS_sched_yield, SYS_sched_getaffinity, SYS_sched_setaffinity,
                  SYS_nanosleep, SYS_clock_nanosleep, SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday,
                  SYS_getpid, SYS_gettid, SYS_getppid, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid,
                  SYS_getrandom, SYS_getrusage, SYS_times, SYS_uname, SYS_exit, SYS_exit_group,
                  SYS_restart_syscall, SYS_set_robust_list, SYS_get_robust_list, SYS_rseq, SYS_set_tid_address})
    f.allow(nr);
#ifdef SYS_time
  f.allow(SYS_time);
#endif
  f.allow_if_bits(SYS_clone, 0, CLONE_THREAD);   // a thread of this process, not a new process
  f.fail(SYS_clone3, ENOSYS);                    // the C library then creates threads with clone
  f.if_arg(SYS_rt_sigaction, 0, SIGSYS, SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ALLOW);  // the handler stays
  f.if_arg(SYS_tgkill, 0, uint32_t(::getpid()), SECCOMP_RET_ALLOW, SECCOMP_RET_TRAP);  // raise(), abort()
  f.allow_if_zero(SYS_prlimit64, 2);             // reading a limit, not raising it
  f.fail(SYS_ioctl, ENOTTY);
  for (long nr : {long(SYS_newfstatat), long(SYS_statx), long(SYS_faccessat), long(SYS_readlinkat), long(SYS_getcwd),
                  long(SYS_sysinfo)})
    f.fail(nr, EPERM);
#ifdef SYS_stat
  for (long nr : {SYS_stat, SYS_lstat, SYS_access, SYS_readlink}) f.fail(nr, EPERM);
#endif
  return f.install();
#else
  (void)report_fd;
  return false;
#endif
}

// ---- the child ---------------------------------------------------------------------------

void close_all_but(int keep) {
  std::vector<int> fds;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const int fd = std::atoi(it->path().filename().c_str());
    if (fd > 2 && fd != keep) fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);  // the iterator's own descriptor, closed by then, fails harmlessly
}

[[noreturn]] void child_main(int fd, const std::function<std::string()>& body, const ChildLimits& limits,
                             pid_t grader, bool grader_has_threads) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != grader) ::_exit(1);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  close_all_but(fd);
  ::clearenv();
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // what the learner prints appears, even before a crash
  if (grader_has_threads) omp_set_num_threads(1);
  rlimit memory{};
  memory.rlim_cur = memory.rlim_max = address_space() + limits.memory_bytes;
  ::setrlimit(RLIMIT_AS, &memory);
  rlimit cpu{};  // a backstop: the grader's clock is what counts, and kills first
  cpu.rlim_cur = rlim_t(std::ceil(limits.seconds)) * rlim_t(std::max(1, omp_get_num_procs())) + 5;
  cpu.rlim_max = cpu.rlim_cur + 1;
  ::setrlimit(RLIMIT_CPU, &cpu);
  const char sandboxed = install_sandbox(fd) ? 1 : 0;

  char tag = kValue;
  std::string out;
  try {
    out = body();
  } catch (const std::bad_alloc&) {
    tag = kOutOfMemory;
  } catch (const std::exception& e) {
    tag = kThrew;
    out = e.what();
  } catch (...) {
    tag = kThrew;
    out = "an exception that is not a std::exception";
  }
  const char head[2] = {tag, sandboxed};
  const bool sent = write_all(fd, head, 2) && write_all(fd, out.data(), out.size());
  ::_exit(sent ? 0 : 1);  // no destructors, no atexit: the child's state is not the grader's
}

std::string signal_words(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "crashed with a segmentation fault (SIGSEGV): it read or wrote memory it does not own, "
             "an index past the end of an array or a null or dangling pointer";
    case SIGBUS: return "crashed with a bus error (SIGBUS): a misaligned or invalid memory access";
    case SIGFPE: return "crashed with SIGFPE: an integer division by zero";
    case SIGILL:
      return "crashed with an illegal instruction (SIGILL): often a function that should return a value "
             "and reaches its end without a return statement";
    case SIGABRT:
      return "stopped itself with abort() (SIGABRT): a failed assert, or an exception where none may pass "
             "(a destructor, a noexcept function)";
    case SIGSYS: return "made a system call the grader does not allow, and blocked the signal that names it";
    default: return std::string("was ended by the signal ") + strsignal(sig);
  }
}

std::string syscall_words(int nr) {
  struct Named {
    long nr;
    const char* name;
    const char* what;
  };
#define HG_CALL(name, what) {SYS_##name, #name, what}
  static const Named kNamed[] = {
#ifdef SYS_open
      HG_CALL(open, "open a file"),          HG_CALL(creat, "create a file"),
      HG_CALL(unlink, "delete a file"),      HG_CALL(rmdir, "delete a folder"),
      HG_CALL(rename, "rename a file"),      HG_CALL(mkdir, "create a folder"),
      HG_CALL(fork, "start a process"),      HG_CALL(vfork, "start a process"),
      HG_CALL(link, "create a link"),        HG_CALL(symlink, "create a link"),
      HG_CALL(chmod, "change a file's permissions"),
#endif
      HG_CALL(openat, "open a file"),        HG_CALL(unlinkat, "delete a file"),
      HG_CALL(renameat, "rename a file"),    HG_CALL(renameat2, "rename a file"),
      HG_CALL(mkdirat, "create a folder"),   HG_CALL(linkat, "create a link"),
      HG_CALL(symlinkat, "create a link"),   HG_CALL(truncate, "change a file's size"),
      HG_CALL(ftruncate, "change a file's size"), HG_CALL(fchmodat, "change a file's permissions"),
      HG_CALL(execve, "start a program"),    HG_CALL(execveat, "start a program"),
      HG_CALL(clone, "start a process"),     HG_CALL(socket, "use the network"),
      HG_CALL(connect, "use the network"),   HG_CALL(kill, "send a signal to another process"),
      HG_CALL(tgkill, "send a signal to another process"), HG_CALL(ptrace, "trace a process"),
      HG_CALL(prlimit64, "raise its own limits"), HG_CALL(pipe2, "open a pipe"),
      HG_CALL(dup3, "copy a file descriptor"), HG_CALL(memfd_create, "create a file in memory"),
  };
#undef HG_CALL
  for (const Named& n : kNamed)
    if (n.nr == nr)
      return format("tried to %s (system call %s). The grader runs it with no access to files, other "
                    "programs or the network: a graded function computes its answer from its arguments "
                    "alone (to see what it does, print to the screen)", n.what, n.name);
  return format("made a system call the grader does not allow (number %d): a graded function computes its "
                "answer from its arguments alone, without files, other programs or the network", nr);
}

}  // namespace

Child::Child(const std::function<std::string()>& body, const ChildLimits& limits) : limits_(limits) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("grader: pipe failed: ") + strerror(errno));
  const bool has_threads = thread_count() > 1;
  std::fflush(stdout);  // or the child, a copy, would print the grader's pending output again
  std::fflush(stderr);
  const pid_t grader = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("grader: fork failed: ") + strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], body, limits, grader, has_threads);
  }
  ::close(fds[1]);
  pid_ = pid;
  fd_ = fds[0];
  started_ = now();
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)), limits_(other.limits_),
      started_(other.started_) {}

Child::~Child() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::pair<std::string, bool> Child::collect() {
  const double deadline = started_ + limits_.seconds;
  std::string bytes;
  bool killed_for_time = false, too_much = false;
  char buf[1 << 16];
  while (true) {
    const double left = deadline - now();
    pollfd p{fd_, POLLIN, 0};
    const int ready = left > 0 ? ::poll(&p, 1, int(std::ceil(left * 1000))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      killed_for_time = true;
      break;
    }
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed the pipe: it has ended (or closed it to hang on)
    bytes.append(buf, size_t(n));
    if (bytes.size() > kMostBytes) {
      too_much = true;
      break;
    }
  }
  ::close(fd_);
  fd_ = -1;
  // The pipe is closed; the child should be gone or going. It gets until the deadline.
  int status = 0;
  while (true) {
    if (killed_for_time || too_much) ::kill(pid_, SIGKILL);
    const pid_t r = ::waitpid(pid_, &status, killed_for_time || too_much ? 0 : WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) break;
    if (now() > deadline) killed_for_time = true;
    else ::usleep(1000);
  }
  pid_ = -1;

  const std::string by = "exercise.cpp's code ";
  if (killed_for_time)
    throw Failed(format("%sdid not finish within %g s (an endless loop? a loop whose end condition is never "
                        "met?). The checks below are not run.", by.c_str(), limits_.seconds), true);
  if (too_much) throw Failed(format("%sreturned more than %zu MiB", by.c_str(), kMostBytes >> 20));
  const char tag = bytes.empty() ? 0 : bytes[0];
  const bool sandboxed = bytes.size() >= 2 && bytes[1] == 1;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU || sig == SIGKILL)
      throw Failed(format("%sused more processor time than the grader allows (%g s of its clock)", by.c_str(),
                          limits_.seconds), true);
    throw Failed(by + signal_words(sig));
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kForbiddenExit && tag == kForbidden && bytes.size() == 2 + sizeof(int)) {
    int nr = 0;
    std::memcpy(&nr, bytes.data() + 2, sizeof nr);
    throw Failed(by + syscall_words(nr));
  }
  if (code == 0 && tag == kValue) return {bytes.substr(2), sandboxed};
  if (code == 0 && tag == kThrew) throw Failed("your code threw an exception: " + bytes.substr(2));
  if (code == 0 && tag == kOutOfMemory)
    throw Failed(format("%sran out of memory: it asked for more than the %zu MiB the grader allows (a size "
                        "computed wrong? a loop that keeps adding to a vector?)", by.c_str(), limits_.memory_bytes >> 20));
  if (bytes.empty())
    throw Failed(format("%sended the whole program (exit code %d) instead of returning: a graded function "
                        "returns its answer to the grader, which prints the verdict", by.c_str(), code));
  throw Failed(by + "wrote something other than its answer to the grader's pipe");
}

}  // namespace detail

}  // namespace grader
