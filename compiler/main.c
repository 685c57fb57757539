/* The rnncc driver: dispatches a subcommand (check, dump, ...) and maps results to exit codes.
 * Key idea: this is the only file in the project allowed to exit the process. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rnncc COMMAND [OPTIONS] FILE...\n"
            "\n"
            "Commands:\n"
            "  check FILE...                 parse and check cell files ('-' = standard input)\n"
            "  dump --ir|--dot FILE          print a cell's IR as text or Graphviz dot\n"
            "  dump --schedule [--dim N=V] FILE  print a cell's plan: GEMMs, fused kernels, packed weights\n"
            "  emit --dim N=V... FILE        print a cell's CUDA kernels (--ptx/--cubin: compile them)\n"
            "  run --dim N=V... FILE         run a cell on the GPU on random data, check it, time it\n"
            "  devices                       list the CUDA devices\n"
            "\n"
            "Options:\n"
            "  -h, --help                    show this help (also: rnncc COMMAND --help)\n"
            "  --version                     show the version\n"
            "\n"
            "Exit status: 0 success, 1 bad input, 2 bad usage.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE_ERROR;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("rnncc %s\n", RNNCC_VERSION);
        return CLI_OK;
    }
    if (strcmp(cmd, "check") == 0) return cli_check(argc - 1, argv + 1);
    if (strcmp(cmd, "dump") == 0) return cli_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "emit") == 0) return cli_emit(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0) return cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "devices") == 0) return cli_devices(argc - 1, argv + 1);
    fprintf(stderr, "rnncc: error: unknown command '%s' (try 'rnncc --help')\n", cmd);
    return CLI_USAGE_ERROR;
}
