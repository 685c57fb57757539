/* The on-disk JIT cache: compiled kernels keyed by a hash of everything that determines them
 * (generated source, compile options, architecture, NVRTC and rnncc versions). */
#ifndef RNNCC_RT_CACHE_H
#define RNNCC_RT_CACHE_H
#include <stddef.h>
#include <stdint.h>

typedef struct RtCache {
    int enabled;
    char dir[4096];
    char why_disabled[256]; /* "" when enabled */
} RtCache;

/* A 128-bit content hash built incrementally (two independent 64-bit FNV-1a lanes). */
typedef struct RtHash { uint64_t a, b; } RtHash;
void rt_hash_init(RtHash *h);
/* Adds n bytes, then a separator, so ("ab","c") and ("a","bc") hash differently. */
void rt_hash_add(RtHash *h, const void *data, size_t n);
void rt_hash_add_str(RtHash *h, const char *s);
/* The key as 32 hexadecimal digits plus NUL. */
void rt_hash_hex(const RtHash *h, char out[33]);

/* Opens the cache: $RNNCC_CACHE_DIR, else $XDG_CACHE_HOME/rnncc, else ~/.cache/rnncc, created
 * 0700; disabled by RNNCC_CACHE_DISABLE=1, or when the directory is not the user's own or is
 * open to others (then why_disabled says so). Never fails: a disabled cache misses. */
void rt_cache_open(RtCache *c);
/* Looks up a key. Returns 1 with a malloc'd copy of the binary on a hit; 0 on a miss. An
 * entry whose header or checksum is wrong is deleted and counts as a miss. */
int rt_cache_get(const RtCache *c, const char *key, void **data, size_t *len);
/* Stores a binary atomically (temporary file in the same directory, fsync, rename).
 * Returns 1 when stored, 0 when the cache is disabled or the write failed (not an error). */
int rt_cache_put(const RtCache *c, const char *key, const void *data, size_t len);

#endif
