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
