// serve's shutdown bound (issue 50: a hostile template, a long JSON parse or a
// blocked read made serve ignore SIGTERM for 40-60 s). Each case runs the
// watch in a forked child whose main thread then does what the case needs
// (gets stuck, or ends in time) and checks its exit status, its stderr line
// and how long it took.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "server/shutdown_watch.h"

namespace og::server {
namespace {

struct Outcome {
  int code = -1;  // exit code, 128 + signal when killed by one, -1 when it had to be killed
  double seconds = 0;
  std::string err;
};

// Runs `body` in a child process (stderr captured); kills it after 10 s.
Outcome run_child(const std::function<void()>& body) {
  int err[2];
  EXPECT_EQ(pipe(err), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], 2);
    close(err[0]);
    body();
    _exit(0);
  }
  close(err[1]);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  Outcome o;
  int status = 0;
  bool reaped = false;
  while (!reaped && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    reaped = waitpid(pid, &status, WNOHANG) == pid;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!reaped) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  } else {
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) o.err.append(buf, static_cast<size_t>(n));
  close(err[0]);
  return o;
}

void stuck() { std::this_thread::sleep_for(std::chrono::seconds(60)); }

TEST(ShutdownWatch, AStuckShutdownEndsAfterGracePlusMargin) {
  const Outcome o = run_child([] {
    ShutdownWatch w(0.3, 0.4);
    w.set_ready();
    kill(getpid(), SIGTERM);
    if (w.wait() != SIGTERM) _exit(3);
    stuck();  // a render, a parse or a read that does not return
  });
  EXPECT_EQ(o.code, 143) << o.err;
  EXPECT_GE(o.seconds, 0.65);
  EXPECT_LT(o.seconds, 3.0);
  EXPECT_EQ(o.err, "[serve] shutdown did not finish within 0.7 s (--shutdown-grace-s 0.3 + 0.4 s): exiting now\n");
}

TEST(ShutdownWatch, AShutdownThatEndsInTimeIsNotCut) {
  const Outcome o = run_child([] {
    {
      ShutdownWatch w(0.5, 0.5);
      w.set_ready();
      kill(getpid(), SIGINT);
      if (w.wait() != SIGINT) _exit(3);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the graceful path
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the bound: the watch stood down
    _exit(7);
  });
  EXPECT_EQ(o.code, 7) << o.err;
  EXPECT_EQ(o.err, "");
}

TEST(ShutdownWatch, ASignalWhileLoadingEndsAtOnce) {
  for (const int sig : {SIGTERM, SIGINT}) {
    const Outcome o = run_child([sig] {
      // Started with SIGINT ignored, as a shell starts a background job.
      signal(SIGINT, SIG_IGN);
      ShutdownWatch w(30);
      kill(getpid(), sig);
      stuck();  // loading
    });
    EXPECT_EQ(o.code, 128 + sig) << o.err;
    EXPECT_LT(o.seconds, 3.0);
    EXPECT_EQ(o.err, std::string("[serve] ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                         " while loading the model: stopped before serving\n");
  }
}

TEST(ShutdownWatch, ASecondSignalEndsAtOnce) {
  const Outcome o = run_child([] {
    ShutdownWatch w(30);
    w.set_ready();
    kill(getpid(), SIGTERM);
    w.wait();
    kill(getpid(), SIGINT);
    stuck();
  });
  EXPECT_EQ(o.code, 130) << o.err;
  EXPECT_LT(o.seconds, 3.0);
  EXPECT_EQ(o.err, "[serve] second signal (SIGINT) during the shutdown: exiting now\n");
}

TEST(ShutdownWatch, StandsDownWithoutASignal) {
  const Outcome o = run_child([] {
    { ShutdownWatch w(0.1, 0.1); }
    _exit(5);
  });
  EXPECT_EQ(o.code, 5) << o.err;
}

}  // namespace
}  // namespace og::server
