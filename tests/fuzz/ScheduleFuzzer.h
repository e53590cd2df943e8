#pragma once
// A seeded generator of (algorithm, schedule, shape) cases over every
// documented primitive, and the oracle each case must satisfy: it ends in a
// UserError, or its CPU result matches a float64 reference (tolerance by
// element type), and a GPU-mapped schedule's PTX assembles with ptxas. An
// InternalError, another exception, a crash, a hang, a slow compile or a
// wrong result is a failure. Each case runs in a child process, so that a
// crash or a hang is reported as such instead of ending the run.
//
// The case is built in layers, one file each: FuzzCase.h (its state),
// FuzzAlgorithm.h, FuzzSchedules.h, FuzzOracle.h.

#include "fuzz/FuzzOracle.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

namespace coalesce::fuzz {

/// Seconds one case may take to compile and run before it counts as slow.
constexpr double kCaseSeconds = 20;

class Case : public Oracle {
public:
  explicit Case(uint64_t seed) : Oracle(seed) {}

  /// Builds and checks the case; `log` receives the program as it is built.
  Outcome run(std::ostream &log) {
    auto start = std::chrono::steady_clock::now();
    try {
      build(log);
      schedule(log);
      Outcome o = check(log);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (seconds > kCaseSeconds && !is_failure(o)) {
        log << "took " << seconds << " s\n";
        return Outcome::Slow;
      }
      return o;
    } catch (const InternalError &e) {
      log << "internal error: " << e.what() << "\n";
      return Outcome::Internal;
    } catch (const UserError &e) {
      log << "user error: " << e.what() << "\n";
      return Outcome::UserError;
    } catch (const std::exception &e) {
      log << "exception: " << e.what() << "\n";
      return Outcome::Other;
    }
  }
};

/// An ostream over a pipe's writing end; each line is written through.
class PipeStream : public std::ostream {
  class Buf : public std::streambuf {
  public:
    explicit Buf(int fd) : fd_(fd) {}

  protected:
    int_type overflow(int_type c) override {
      if (c == traits_type::eof())
        return traits_type::not_eof(c);
      char ch = static_cast<char>(c);
      return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
    }
    std::streamsize xsputn(const char *s, std::streamsize n) override {
      std::streamsize off = 0;
      while (off < n) {
        ssize_t w = ::write(fd_, s + off, static_cast<size_t>(n - off));
        if (w <= 0)
          return off;
        off += w;
      }
      return n;
    }

  private:
    int fd_;
  };
  Buf buf_;

public:
  explicit PipeStream(int fd) : std::ostream(nullptr), buf_(fd) { rdbuf(&buf_); }
};

/// Runs case `seed` in a child process with a time limit; fills `log` with
/// the case's program and what happened.
inline Outcome run_isolated(uint64_t seed, std::string &log, int timeout_s = 60) {
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0)
    return Outcome::Other;
  pid_t child = fork();
  if (child == 0) {
    close(pipe_fd[0]);
    // The log goes to the pipe as it is written, so that a case that
    // crashes still shows its program up to the crash.
    PipeStream text(pipe_fd[1]);
    Outcome o = Case(seed).run(text);
    text.flush();
    close(pipe_fd[1]);
    _exit(static_cast<int>(o));
  }
  close(pipe_fd[1]);
  log.clear();
  auto start = std::chrono::steady_clock::now();
  auto left_ms = [&] {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return static_cast<int>(std::max<long long>(0, timeout_s * 1000LL - spent.count()));
  };
  // Read the log as it comes (a long one must not block the child) until the
  // child closes its end or the deadline passes.
  char buf[4096];
  for (;;) {
    pollfd fd{pipe_fd[0], POLLIN, 0};
    if (poll(&fd, 1, left_ms()) <= 0)
      break; // the deadline
    ssize_t n = read(pipe_fd[0], buf, sizeof buf);
    if (n <= 0)
      break;
    log.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  bool done = false;
  for (;;) {
    if (waitpid(child, &status, WNOHANG) == child) {
      done = true;
      break;
    }
    if (left_ms() == 0) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    usleep(2000);
  }
  close(pipe_fd[0]);
  if (!done)
    return Outcome::Hang;
  if (WIFSIGNALED(status))
    return Outcome::Crash;
  int code = WEXITSTATUS(status);
  return code <= static_cast<int>(Outcome::Other) ? static_cast<Outcome>(code) : Outcome::Crash;
}

} // namespace coalesce::fuzz
