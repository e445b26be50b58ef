/*
 * What the service's two helpers on the host share (ctl.c, the terminal helper; relay.c, the
 * WebSocket relay): answers to the service's requests, the frames they send it on descriptor 4
 * (protocol.ts FromCtl), and the checks and system calls both make on descriptors taken from it.
 */
#ifndef BIANBU_HELPER_H
#define BIANBU_HELPER_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#define DEVPTS_MAGIC 0x1cd1

/* Frames on descriptor 4 (protocol.ts FromCtl): type u8, id u32, length u32, payload. */
enum { CTL_DATA = 2, CTL_RELEASED = 5, CTL_ENDED = 6, CTL_TYPED = 7 };
#define HEADER 9
#define DATA_FD 4

#define UNUSED __attribute__((unused))

/* One answer line on stdout, in the order the requests came. */
UNUSED __attribute__((format(printf, 1, 2))) static void reply(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

UNUSED static int pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
UNUSED static int getfd(int pidfd, int fd) { return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0); }

/* A devpts ptmx node: the character device 5:2 on a devpts file system. */
UNUSED static int is_ptmx(int fd, struct stat *st) {
  struct statfs fs;
  return fstat(fd, st) == 0 && S_ISCHR(st->st_mode) && major(st->st_rdev) == 5 && minor(st->st_rdev) == 2 &&
         fstatfs(fd, &fs) == 0 && fs.f_type == DEVPTS_MAGIC;
}

UNUSED static void put32(char *p, uint32_t v) {
  p[0] = (char)(v >> 24), p[1] = (char)(v >> 16), p[2] = (char)(v >> 8), p[3] = (char)v;
}

/* Frames go out whole: the service drains this pipe all the time, so a write waits only briefly. */
UNUSED static void write_all(const char *p, size_t n) {
  while (n) {
    ssize_t w = write(DATA_FD, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(0); /* the service is gone */
    p += w, n -= (size_t)w;
  }
}

#endif
