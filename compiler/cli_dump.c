/* `rnncc check` and `rnncc dump`: check cell files, print a cell's IR as text or dot.
 * Key idea: both go through cli_load, so the diagnostics are the same as every other command's. */
#include <getopt.h>
#include <string.h>

#include "cli.h"

int cli_check(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: rnncc check FILE...\n"
                   "Parses and checks each cell file ('-' reads standard input); prints diagnostics.\n");
            return CLI_OK;
        }
        return CLI_USAGE_ERROR;
    }
    if (optind >= argc) {
        fprintf(stderr, "rnncc check: error: no input files (argument FILE)\n");
        return CLI_USAGE_ERROR;
    }
    int status = CLI_OK;
    for (int i = optind; i < argc; i++) {
        CliSource s;
        if (cli_load(&s, argv[i]) != CLI_OK) status = CLI_INPUT_ERROR;
        cli_source_free(&s);
    }
    return status;
}

int cli_dump(int argc, char **argv) {
    static const struct option opts[] = {
        {"ir", no_argument, 0, 'i'}, {"dot", no_argument, 0, 'd'}, {"cell", required_argument, 0, 'c'},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *what = NULL, *cell = NULL, *out_path = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': what = "ir"; break;
        case 'd': what = "dot"; break;
        case 'c': cell = optarg; break;
        case 'o': out_path = optarg; break;
        case 'h':
            printf("usage: rnncc dump (--ir | --dot) [--cell NAME] [-o FILE] FILE\n"
                   "Prints the IR of each cell in FILE (or only --cell NAME) as stable text or Graphviz dot.\n");
            return CLI_OK;
        default: return CLI_USAGE_ERROR;
        }
    }
    if (!what) {
        fprintf(stderr, "rnncc dump: error: say what to dump (--ir or --dot)\n");
        return CLI_USAGE_ERROR;
    }
    if (optind != argc - 1) {
        fprintf(stderr, "rnncc dump: error: expected exactly one input file (argument FILE)\n");
        return CLI_USAGE_ERROR;
    }
    CliSource s;
    int status = cli_load(&s, argv[optind]);
    if (status == CLI_OK) {
        StrBuf out = {0};
        int found = 0;
        for (int i = 0; i < s.module->ncells; i++) {
            const IrCell *ic = s.module->cells[i];
            if (cell && strcmp(ic->name, cell) != 0) continue;
            if (found++) sb_putc(&out, '\n');
            if (strcmp(what, "ir") == 0) ir_dump(ic, &out);
            else ir_dump_dot(ic, &out);
        }
        if (!found) {
            fprintf(stderr, "rnncc dump: error: no cell named '%s' in %s (option --cell)\n", cell, s.path);
            status = CLI_USAGE_ERROR;
        } else {
            status = out.failed ? CLI_INPUT_ERROR : cli_write_output(out_path, sb_str(&out), out.len);
        }
        sb_free(&out);
    }
    cli_source_free(&s);
    return status;
}
