/* On-disk cache of compiled kernels. Key idea: keyed on content, never on paths, written
 * atomically and checksummed, in a directory that only its owner can write (GROMACS served
 * stale path-keyed binaries; a world-writable PyCUDA cache let others swap in GPU code). */
#define _POSIX_C_SOURCE 200809L
#include "rt_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'R', 'N', 'N', 'C', 'C', 'B', 'N', '1'};
enum { HEADER = 24, MAX_ENTRY = 256 << 20 };

void rt_hash_init(RtHash *h) {
    h->a = 0xcbf29ce484222325ull;
    h->b = 0x84222325cbf29ce4ull ^ 0x9e3779b97f4a7c15ull;
}

void rt_hash_add(RtHash *h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h->a = (h->a ^ p[i]) * 0x100000001b3ull;
        h->b = (h->b ^ p[i] ^ (h->b >> 29)) * 0x00000100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
    uint64_t len = n;
    h->a = (h->a ^ len) * 0x100000001b3ull;
    h->b = (h->b ^ (len << 7)) * 0x00000100000001b3ull;
}

void rt_hash_add_str(RtHash *h, const char *s) { rt_hash_add(h, s, strlen(s)); }

void rt_hash_hex(const RtHash *h, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h->a, (unsigned long long)h->b);
}

static uint64_t checksum(const void *data, size_t n) {
    RtHash h;
    rt_hash_init(&h);
    rt_hash_add(&h, data, n);
    return h.a ^ (h.b * 31);
}

static void disable(RtCache *c, const char *why) {
    c->enabled = 0;
    snprintf(c->why_disabled, sizeof c->why_disabled, "%s", why);
}

void rt_cache_open(RtCache *c) {
    memset(c, 0, sizeof *c);
    const char *off = getenv("RNNCC_CACHE_DISABLE");
    if (off && *off && strcmp(off, "0") != 0) { disable(c, "RNNCC_CACHE_DISABLE is set"); return; }
    const char *dir = getenv("RNNCC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir) n = snprintf(c->dir, sizeof c->dir, "%s", dir);
    else if (xdg && *xdg) n = snprintf(c->dir, sizeof c->dir, "%s/rnncc", xdg);
    else if (home && *home) n = snprintf(c->dir, sizeof c->dir, "%s/.cache/rnncc", home);
    else { disable(c, "no cache directory: set RNNCC_CACHE_DIR or HOME"); return; }
    if (n < 0 || (size_t)n >= sizeof c->dir - 64) { disable(c, "cache directory path too long"); return; }
    /* create missing parents (~/.cache) with default permissions, the cache itself 0700 */
    for (char *p = c->dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(c->dir, 0755);
        *p = '/';
    }
    if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) { disable(c, "cannot create the cache directory"); return; }
    struct stat st;
    if (lstat(c->dir, &st) != 0 || !S_ISDIR(st.st_mode)) { disable(c, "the cache path is not a directory"); return; }
    if (st.st_uid != geteuid()) { disable(c, "the cache directory belongs to another user"); return; }
    if (st.st_mode & 077) { disable(c, "the cache directory is open to other users (want mode 0700)"); return; }
    c->enabled = 1;
}

static void entry_path(const RtCache *c, const char *key, char *path, size_t size) {
    snprintf(path, size, "%s/%s.bin", c->dir, key);
}

static void put_u64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int rt_cache_get(const RtCache *c, const char *key, void **data, size_t *len) {
    if (!c->enabled) return 0;
    char path[4200];
    entry_path(c, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char head[HEADER];
    unsigned char *buf = NULL;
    int ok = fread(head, 1, HEADER, f) == HEADER && memcmp(head, MAGIC, 8) == 0;
    uint64_t n = ok ? get_u64(head + 8) : 0;
    ok = ok && n > 0 && n <= MAX_ENTRY && (buf = malloc((size_t)n)) != NULL;
    ok = ok && fread(buf, 1, (size_t)n, f) == n && fgetc(f) == EOF;
    ok = ok && checksum(buf, (size_t)n) == get_u64(head + 16);
    fclose(f);
    if (!ok) {
        free(buf);
        unlink(path); /* corrupt or truncated: rebuild */
        return 0;
    }
    *data = buf;
    *len = (size_t)n;
    return 1;
}

int rt_cache_put(const RtCache *c, const char *key, const void *data, size_t len) {
    if (!c->enabled || len == 0 || len > MAX_ENTRY) return 0;
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s-XXXXXX", c->dir, key);
    entry_path(c, key, path, sizeof path);
    int fd = mkstemp(tmp);
    if (fd < 0) return 0;
    unsigned char head[HEADER];
    memcpy(head, MAGIC, 8);
    put_u64(head + 8, len);
    put_u64(head + 16, checksum(data, len));
    int ok = write(fd, head, HEADER) == HEADER;
    const char *p = data;
    for (size_t done = 0; ok && done < len;) {
        ssize_t w = write(fd, p + done, len - done);
        if (w <= 0) ok = 0;
        else done += (size_t)w;
    }
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    return ok;
}
