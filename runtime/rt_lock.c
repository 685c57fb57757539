/* The library's one process-wide object: a lock that keeps graph captures apart from cuBLAS
 * handle creation and destruction (docs/runtime.md, Threads). Key idea: destroying a cuBLAS or
 * cuBLASLt handle synchronises the context, which spoils every stream capture in progress on
 * the device, and repeated during another thread's captures it crashed driver 580.159.04 inside
 * cuCtxSynchronize (measured on an H100; creating one did neither, but is kept apart too); models
 * take this lock around each capture and around their handles' creation and destruction. */
#include <pthread.h>

#include "rt_internal.h"

static pthread_mutex_t handles_and_captures = PTHREAD_MUTEX_INITIALIZER;

void rt_exclusive_begin(void) { pthread_mutex_lock(&handles_and_captures); }

void rt_exclusive_end(void) { pthread_mutex_unlock(&handles_and_captures); }
