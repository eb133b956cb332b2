#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "csupport.h"

void gb_set_thread_name(const char *name) {
  char buf[16];
  strncpy(buf, name, sizeof buf - 1);
  buf[sizeof buf - 1] = 0;
  pthread_setname_np(pthread_self(), buf);
}

int gb_thread_id(void) { return (int)gettid(); }

#include <sys/eventfd.h>
int gb_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

#include <errno.h>
#include <sys/prctl.h>
int gb_forbid_core_dumps(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : errno; }

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>

int gb_spawn_clean(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stdout_fd,
                   int own_group) {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  int rc = posix_spawnattr_init(&attr);
  if (rc != 0) return rc;
  rc = posix_spawn_file_actions_init(&actions);
  if (rc != 0) {
    posix_spawnattr_destroy(&attr);
    return rc;
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (own_group ? POSIX_SPAWN_SETPGROUP : 0);
  rc = posix_spawnattr_setflags(&attr, flags);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &all);
  if (rc == 0 && own_group) rc = posix_spawnattr_setpgroup(&attr, 0);
  if (rc == 0 && stdout_fd != -1) rc = posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (rc == 0) rc = posix_spawn(pid, path, &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

int gb_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int gb_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

#include <malloc.h>
void gb_malloc_map_blocks_from(int bytes) { mallopt(M_MMAP_THRESHOLD, bytes); }
