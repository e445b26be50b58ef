/*
 * One viewer's way to a riscv64 board's screen (screen.ts): QEMU's VNC server listens on 127.0.0.1:5900
 * in the board's own network namespace (bubblewrap's, where nothing else lives), and this process,
 * started by the service for each viewer, joins that namespace and no other, connects there and copies
 * bytes both ways over its stdin and stdout.
 *
 *   fd 3    the program itself (the service runs it from its descriptor); closed at once
 *   fd 4    the board's network namespace, a handle the service opened and checked when the machine
 *           started (its inode is the one bubblewrap reported): this process never resolves a path, so
 *           nothing the board controls decides where it goes
 *   stderr  "ok\n" once connected, or "err <what> <errno>\n" and exit 1
 *
 * Only the network namespace changes (setns CLONE_NEWNET): the mount, pid and user namespaces stay the
 * host's, and the address is fixed here. Privileges end right after the namespace is joined: the bytes
 * of the board are copied by a process of uid/gid 65534 with no capabilities, no_new_privs, and death
 * with the service. It ends when either side closes (or errs): a viewer who leaves ends it, and so does
 * a machine that stops.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define NS_FD 4
#define PORT 5900
#define NOBODY 65534

static void fail(const char *what) {
  dprintf(2, "err %s %d\n", what, errno);
  _exit(1);
}

/* Writes all of buf, or answers -1 (the other side is gone). */
static int write_all(int fd, const char *buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= w;
  }
  return 0;
}

int main(void) {
  close(3);
  if (setns(NS_FD, CLONE_NEWNET) != 0) fail("setns");
  close(NS_FD);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) fail("socket");
  /* From here on nothing needs a privilege. */
  if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 || setresuid(NOBODY, NOBODY, NOBODY) != 0)
    fail("drop");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
  /* Set after the uid change, which would clear it; the service is the parent. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail("pdeathsig");
  if (getppid() == 1) fail("orphan");
  signal(SIGPIPE, SIG_IGN);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(PORT);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) fail("connect");
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  dprintf(2, "ok\n");

  static char buf[2][65536];
  struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = s, .events = POLLIN}};
  for (;;) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    /* viewer → screen */
    if (p[0].revents) {
      ssize_t n = read(0, buf[0], sizeof buf[0]);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || write_all(s, buf[0], n) != 0) return 0;
    }
    /* screen → viewer: a viewer that does not read blocks this write, and so QEMU's sends. */
    if (p[1].revents) {
      ssize_t n = read(s, buf[1], sizeof buf[1]);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || write_all(1, buf[1], n) != 0) return 0;
    }
  }
}
