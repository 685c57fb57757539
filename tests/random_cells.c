/* Writes the random cells that tests/testutil.c's tu_random_cell draws, for seeds FIRST..LAST, into
 * DIR as rnd<seed>.cell, or with --wide tu_random_cell_wide's as wide<seed>.cell: the cells of the
 * GPU fuzz run (tests/gpu/fuzz_configs.py), none of which a test was written for.
 * Usage: random_cells [--wide] FIRST LAST DIR. Exit status 0, or 1 with a message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Parses argument name's text as a seed into *v; 0 (with a message) when it is not one. */
static int parse_seed(const char *name, const char *text, unsigned long long *v) {
    char *end;
    errno = 0;
    *v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-') {
        fprintf(stderr, "random_cells: %s must be a non-negative integer, not '%s'\n", name, text);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    const int wide = argc > 1 && strcmp(argv[1], "--wide") == 0;
    argv += wide;
    argc -= wide;
    if (argc != 4) {
        fprintf(stderr, "usage: random_cells [--wide] FIRST LAST DIR\n");
        return 1;
    }
    unsigned long long first, last;
    if (!parse_seed("FIRST", argv[1], &first) || !parse_seed("LAST", argv[2], &last)) return 1;
    if (last < first) {
        fprintf(stderr, "random_cells: LAST (%llu) is below FIRST (%llu)\n", last, first);
        return 1;
    }
    char src[8192], path[4096];
    for (unsigned long long s = first; s <= last; s++) {
        int n = wide ? tu_random_cell_wide(s, src, sizeof src) : tu_random_cell(s, src, sizeof src);
        if (n < 0) {
            fprintf(stderr, "random_cells: seed %llu: the cell's text does not fit %zu bytes\n", s, sizeof src);
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s%llu.cell", argv[3], wide ? "wide" : "rnd", s);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(src, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
            fprintf(stderr, "random_cells: cannot write '%s': %s\n", path, strerror(errno));
            return 1;
        }
        if (s == last) break; /* LAST may be the largest value */
    }
    return 0;
}
