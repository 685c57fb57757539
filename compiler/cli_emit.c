/* `rnncc emit`: a cell's CUDA translation unit for bound dimensions, as source, PTX or CUBIN.
 * Key idea: the same path the runtime takes (plan, layout, cg_emit_forward, rt_nvrtc_compile),
 * so what this prints is exactly what a model would run. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "codegen/cg.h"
#include "ir/sched.h"
#include "runtime/rt_nvrtc.h"

enum { MAX_DIMS = 64 };

static void print_diags(const Diags *d) {
    StrBuf err = {0};
    diag_render(d, &err);
    fputs(sb_str(&err), stderr);
    sb_free(&err);
}

/* The persistent unit's tile as rnncc emit's options give it (0 or -1: not given). */
typedef struct EmitTile {
    int cluster;     /* --cluster C: blocks per cluster (0: the rule); the planned size on return */
    int warps;       /* --warps W: warps a block (0: the default) */
    long long chunk; /* --chunk K: staging chunks at most K long (0: the first layout that fits) */
    int seqs;        /* --seqs S: at most S sequences a matrix-product pass (0: the batch class's) */
    int handoff;     /* --handoff flags|barrier|direct: how a forward's steps meet, a backward's operand loaded (-1: a barrier) */
    int split;       /* --split: a backward's clusters split K */
    int blocks;      /* --blocks G: at most G blocks (0: one a multiprocessor) */
    int wregs;       /* --wregs R: registers of weights held in registers (CgPersistAsk.wregs; 0: the rule's) */
    int waves;       /* --waves W: staging waves at most (CgPersistAsk.waves; 0: the rule's) */
} EmitTile;

/* Plans, lays out and emits one cell into out (a per-step unit: the parts cg_emit_unit takes; with
 * batch, the persistent unit of tile t; fold: ic is that fold's cell, packed as the cell as written);
 * returns a CLI status. */
static int emit_cell(CliSource *s, const IrCell *ic, const IrFold *fold, const char **dims, int ndims, long long batch,
                     int backward, int parts, rnncc_precision precision, EmitTile *t, StrBuf *out) {
    const CgProducts products = cg_products_of(precision); /* the precision's products (codegen/cg.h) */
    Plan *plan = sched_plan(&s->arena, ic, &s->diags);
    if (!plan) {
        print_diags(&s->diags);
        return CLI_INPUT_ERROR;
    }
    if (fold && !cli_fold_pack_like(s, "emit", plan, fold)) return CLI_INPUT_ERROR;
    int64_t *dimval = arena_array(&s->arena, (size_t)ic->ndims + 1, sizeof *dimval);
    if (!dimval) {
        fprintf(stderr, "rnncc emit: error: out of memory\n");
        return CLI_INPUT_ERROR;
    }
    int before = s->diags.nerrors;
    if (!ir_bind_dims(ic, dims, ndims, dimval, &s->diags)) {
        print_diags(&s->diags);
        StrBuf names = {0};
        for (int d = 0; d < ic->ndims; d++)
            if (ic->dims[d].name) sb_printf(&names, " --dim %s=VALUE", ic->dims[d].name);
        fprintf(stderr, "rnncc emit: note: cell '%s' takes%s\n", ic->name,
                names.len ? arena_printf(&s->arena, ":%s", sb_str(&names)) : " no --dim (every size of it is a number)");
        sb_free(&names);
        return CLI_USAGE_ERROR;
    }
    PlanLayout *layout = sched_layout(&s->arena, plan, dimval, &s->diags);
    if (layout && batch == 0) cg_emit_unit(&s->arena, plan, layout, parts, out, &s->diags);
    if (!layout || s->diags.nerrors > before) {
        print_diags(&s->diags);
        return CLI_INPUT_ERROR;
    }
    if (batch == 0) return CLI_OK;
    CgPersist P;
    char why[512];
    const int handoff = t->handoff < 0 ? CG_HANDOFF_BARRIER : t->handoff;
    CgPersistAsk ask = cg_persist_h100_ask(batch, backward, products, t->cluster); /* the rule's clusters and split, unless --cluster */
    if (!t->cluster) ask.cluster = cg_persist_cluster(batch, products, backward, handoff); /* a forward by flags takes none */
    ask.warps = t->warps;
    ask.kc_cap = t->chunk;
    ask.nw_max = t->seqs / 4;
    ask.handoff = handoff;
    ask.split |= t->split;
    ask.blocks = t->blocks;
    ask.wregs = t->wregs;
    ask.waves = t->waves;
    ask.twins = precision == RNNCC_FP16 || precision == RNNCC_BF16;
    int in_pairs; /* planned as the runtime builds it: fours on the blocks an H100 holds, or the rule's pairs */
    if (!cg_persist_h100_plan(&s->arena, layout, &ask, !t->cluster, &P, why, sizeof why, &in_pairs)) {
        fprintf(stderr, "rnncc emit: error: cell '%s' has no persistent %skernel on an H100: %s\n", ic->name,
                backward ? "backward " : "", why);
        return CLI_INPUT_ERROR;
    }
    if (in_pairs)
        fprintf(stderr, "rnncc emit: note: cell '%s' is planned in pairs: %s (--cluster 4 plans them)\n", ic->name,
                cg_persist_pairs_reason(&P));
    if (t->cluster > 1 && P.cluster != t->cluster)
        fprintf(stderr, "rnncc emit: note: cell '%s' is planned without clusters (--cluster %d): %s\n", ic->name,
                t->cluster, why);
    if (t->split && P.cluster > 1 && !P.split)
        fprintf(stderr, "rnncc emit: note: cell '%s' is planned with clusters sharing the staged operand (--split): %s\n",
                ic->name, backward ? why : "only a backward's clusters split K");
    if (handoff == CG_HANDOFF_FLAGS && !P.flags)
        fprintf(stderr, "rnncc emit: note: cell '%s' is planned with grid barriers (--handoff flags): flags need a %s\n",
                ic->name, backward ? "forward" : "plan with its step GEMMs staged whole (phase 0's on states), no clusters, no "
                                                  "element-wise group before the first GEMMs, groups that read only their own "
                                                  "block's units, and multiplied states at least as long as the blocks");
    if (handoff == CG_HANDOFF_DIRECT && !P.direct)
        fprintf(stderr, "rnncc emit: note: cell '%s' is planned with staged operands (--handoff direct): loading them straight "
                        "needs fp16 or bf16 products, no clusters sharing copies (a backward's clusters splitting K load their own "
                        "parts), an operand staged whole from its 16-bit twin in one pass, and its weights held in registers "
                        "beside the fragments\n",
                ic->name);
    if (t->blocks && P.blocks != t->blocks)
        fprintf(stderr, "rnncc emit: note: cell '%s' is planned on %d blocks (--blocks %d): at most one a multiprocessor of an "
                        "H100, a multiple of the cluster (%d), and no more than the work has\n",
                ic->name, P.blocks, t->blocks, P.cluster);
    t->cluster = P.cluster;
    if (!cg_emit_persistent(&s->arena, plan, layout, &P, out, &s->diags)) {
        print_diags(&s->diags);
        return CLI_INPUT_ERROR;
    }
    return CLI_OK;
}

/* Compiles source through NVRTC and writes the PTX or CUBIN. */
static int compile_and_write(const char *source, const char *cell, RtNvrtcTarget target, const char *arch,
                             const char *out_path) {
    RtNvrtcResult res;
    char name[128];
    snprintf(name, sizeof name, "%.100s.cu", cell);
    RtNvrtcStatus st = rt_nvrtc_compile(source, name, target, arch, &res);
    int status = CLI_OK;
    if (st != RT_NVRTC_OK) {
        StrBuf report = {0};
        rt_nvrtc_report(&res, &report);
        fprintf(stderr, "rnncc emit: error: NVRTC could not compile cell '%s' for %s\n%s", cell, arch, sb_str(&report));
        sb_free(&report);
        status = st == RT_NVRTC_ERR_ARCH ? CLI_USAGE_ERROR : CLI_INPUT_ERROR;
    } else {
        if (res.log && res.log[0]) fprintf(stderr, "%s", res.log); /* NVRTC's warnings */
        status = cli_write_output(out_path, res.image, res.size);
    }
    rt_nvrtc_result_free(&res);
    return status;
}

/* A tile option's value that its parser refused: says what it takes; returns CLI_USAGE_ERROR. */
static int refused(const char *opt, const char *values, const char *arg) {
    fprintf(stderr, "rnncc emit: error: %s must be %s, not '%s'\n", opt, values, arg);
    return CLI_USAGE_ERROR;
}

int cli_emit(int argc, char **argv) {
    static const struct option opts[] = {
        {"cell", required_argument, 0, 'c'}, {"dim", required_argument, 0, 'D'},
        {"output", required_argument, 0, 'o'}, {"ptx", no_argument, 0, 'p'}, {"cubin", no_argument, 0, 'b'},
        {"arch", required_argument, 0, 'a'}, {"forward", no_argument, 0, 'F'}, {"backward", no_argument, 0, 'B'},
        {"persistent", required_argument, 0, 'P'}, {"precision", required_argument, 0, 'r'},
        {"cluster", required_argument, 0, 'C'}, {"warps", required_argument, 0, 'W'},
        {"chunk", required_argument, 0, 'K'}, {"seqs", required_argument, 0, 'S'},
        {"handoff", required_argument, 0, 'H'}, {"split", no_argument, 0, 'X'}, {"blocks", required_argument, 0, 'G'},
        {"wregs", required_argument, 0, 'R'}, {"waves", required_argument, 0, 'V'}, {"fold", no_argument, 0, 'L'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *cell = NULL, *out_path = NULL, *arch = NULL;
    EmitTile tile = {.handoff = -1}; /* the persistent unit's tile options */
    const char *dims[MAX_DIMS];
    int ndims = 0, ptx = 0, cubin = 0, part = 0, c; /* part: 0 all, 'F' forward only, 'B' backward only */
    int precision_given = 0, fold = 0;
    rnncc_precision precision = RNNCC_FP32;
    long long batch = 0; /* --persistent N: the persistent unit for batches of N */
    unsigned char seen[256] = {0};
    optind = 1; /* options may follow FILE (GNU argument permutation) */
    while ((c = cli_getopt("emit", argc, argv, "o:h", opts)) != -1) {
        if (c != 'D' && c != 'F' && c != 'B' && !cli_once("emit", opts, c, seen)) return CLI_USAGE_ERROR;
        switch (c) {
        case 'c': cell = optarg; break;
        case 'o': out_path = optarg; break;
        case 'p': ptx = 1; break;
        case 'b': cubin = 1; break;
        case 'a': arch = optarg; break;
        case 'P': if (!cli_parse_batch("emit", "--persistent", optarg, &batch)) return CLI_USAGE_ERROR; break;
        case 'r':
            if (!cli_parse_precision("emit", optarg, &precision)) return CLI_USAGE_ERROR;
            precision_given = 1;
            break;
        case 'C':
            if (!(tile.cluster = cg_persist_cluster_parse(optarg))) return refused("--cluster", CG_PERSIST_CLUSTER_VALUES, optarg);
            break;
        case 'W':
            if (!(tile.warps = cg_persist_warps_parse(optarg))) return refused("--warps", CG_PERSIST_WARPS_VALUES, optarg);
            break;
        case 'K':
            if (!(tile.chunk = cg_persist_chunk_parse(optarg))) return refused("--chunk", CG_PERSIST_CHUNK_VALUES, optarg);
            break;
        case 'S':
            if (!(tile.seqs = cg_persist_seqs_parse(optarg))) return refused("--seqs", CG_PERSIST_SEQS_VALUES, optarg);
            break;
        case 'H':
            if ((tile.handoff = cg_persist_handoff_parse(optarg)) < 0)
                return refused("--handoff", CG_PERSIST_HANDOFF_VALUES, optarg);
            break;
        case 'X': tile.split = 1; break;
        case 'L': fold = 1; break;
        case 'G':
            if (!(tile.blocks = cg_persist_blocks_parse(optarg))) return refused("--blocks", CG_PERSIST_BLOCKS_VALUES, optarg);
            break;
        case 'R':
            if (!(tile.wregs = cg_persist_wregs_parse(optarg))) return refused("--wregs", CG_PERSIST_WREGS_VALUES, optarg);
            break;
        case 'V':
            if (!(tile.waves = cg_persist_waves_parse(optarg))) return refused("--waves", CG_PERSIST_WAVES_VALUES, optarg);
            break;
        case 'F':
        case 'B':
            if (part && part != c) {
                fprintf(stderr, "rnncc emit: error: --forward and --backward exclude each other\n");
                return CLI_USAGE_ERROR;
            }
            part = c;
            break;
        case 'D': if (!cli_add_dim("emit", optarg, dims, &ndims, MAX_DIMS)) return CLI_USAGE_ERROR; break;
        case 'h':
            printf("usage: rnncc emit [--cell NAME] [--dim NAME=VALUE]... [--forward | --backward] [--fold]\n"
                   "                  [--persistent N [--precision P] [--cluster C] [--warps W]\n"
                   "                  [--chunk K] [--seqs S] [--handoff flags|barrier|direct] [--split] [--blocks G]\n"
                   "                  [--wregs R] [--waves W]]\n"
                   "                  [--ptx | --cubin] [--arch ARCH]\n"
                   "                  [-o|--output FILE] FILE\n"
                   "Prints the CUDA translation unit of a cell in FILE (the only one, or --cell NAME) with every\n"
                   "dimension bound by --dim: the forward kernels, then the backward kernels derived from them.\n"
                   "--forward or --backward print only that part of it; with --ptx or --cubin they compile that\n"
                   "part's own program, as the runtime does (it compiles the two side by side).\n"
                   "--ptx or --cubin compile it with NVRTC for ARCH (default sm_90) and write the result instead;\n"
                   "a CUBIN is binary and is written only to -o FILE or a pipe.\n"
                   "--fold emits the cell after the projection fold, as the runtime runs it folded (its first line\n"
                   "says what the fold did; rnncc dump --fold; docs/runtime.md), or says why it does not fold.\n"
                   "--persistent N prints instead the persistent backend's unit (one kernel for the whole step\n"
                   "loop) for batches of N sequences, sized for an H100 (132 multiprocessors, 227 KB of shared\n"
                   "memory a block); with --backward, its backward unit. --precision tf32, fp16 or bf16 (default\n"
                   "fp32) gives the unit whose matrix products run on tensor cores with inputs of that precision,\n"
                   "as a model of that precision runs it (fp16 and bf16: the weights held on chip in 16 bits, and\n"
                   "the kernel writes 16-bit twins of the GEMM inputs it stores whole); tf32x3 gives fp32's.\n"
                   "--cluster C (1, 2 or 4; default the runtime's rule, planned as the runtime builds it: fours on\n"
                   "the 120 blocks whose clusters an H100 holds at once, pairs where those would not hold the step\n"
                   "weights in registers and pairs would, with a note) groups its blocks in clusters of C that\n"
                   "fetch the step's operand once and share it (4: on 120 blocks too, or without clusters on every\n"
                   "multiprocessor where the fours do not fit or are refused, as the runtime does); such a unit\n"
                   "compiles for sm_90a (the default --arch then). --warps W (4, 8 or 16; default 8) sets the warps\n"
                   "a block, --chunk K (256 to 65536) stages operands in chunks of at most K columns (16-bit\n"
                   "products with 16 warps: whole 512s), --seqs S (4, 8, 16 or 32; tensor cores at least 8) takes at\n"
                   "most S sequences a matrix-product pass: the tiles a model's search tries (RNNCC_PERSIST_SEARCH,\n"
                   "docs/backends.md). --handoff flags hands a forward's states on to the next step as flagged words\n"
                   "instead of meeting at a grid barrier (barrier, the default), and a later phase's operand\n"
                   "(mLSTM's m) on to that phase so, where the plan allows it: no clusters, step GEMMs staged whole.\n"
                   "--handoff direct keeps the grid barrier but stages nothing: each warp loads its share of the\n"
                   "operand's 16-bit twin straight into its products' registers, where the plan allows it (fp16 or\n"
                   "bf16, no clusters sharing copies, the step weights held in registers beside those fragments);\n"
                   "a backward (the runtime's rule for fp16 and bf16) so loads d(gates), in clusters splitting K too.\n"
                   "--split (a backward with --cluster 2 or 4) has block r of a cluster keep the cluster's rows\n"
                   "for the r-th part of K and stage only that part, the blocks adding up each other's partial\n"
                   "sums through distributed shared memory (RNNCC_PERSIST_SPLIT), where the rows fit one pass;\n"
                   "without --cluster, a backward of 17-32 sequences splits K in pairs by rule, on tensor cores\n"
                   "one of 9-16 in fours. --blocks G (1 to\n"
                   "1024) plans at most G blocks (a multiple of the cluster; default one a multiprocessor), more\n"
                   "work a block: the search's fewer-blocks tile. --wregs R (0 to 255; default a budget, 128 at\n"
                   "4 and 8 warps, less for some) lets a tensor-core forward, or an FFMA forward or backward,\n"
                   "hold at most R registers a thread of step weights for every step instead of reading them\n"
                   "from shared memory (0: none; RNNCC_PERSIST_WREGS; a kernel past its budget may spill, which\n"
                   "the runtime then builds again holding fewer). --waves W (0, 2 or 4; default the rule's, up to 4\n"
                   "where a tile holds its weights in registers, stages its own copies and takes 16 sequences a\n"
                   "pass or more) stages such a tile in at most W waves of copies, the product starting on the\n"
                   "first (0: in one go; RNNCC_PERSIST_WAVES).\n");
            return CLI_OK;
        default: return CLI_USAGE_ERROR;
        }
    }
    if (ptx && cubin) {
        fprintf(stderr, "rnncc emit: error: --ptx and --cubin exclude each other\n");
        return CLI_USAGE_ERROR;
    }
    if (arch && !ptx && !cubin) {
        fprintf(stderr, "rnncc emit: error: --arch applies to --ptx or --cubin (the CUDA text is the same for every architecture)\n");
        return CLI_USAGE_ERROR;
    }
    if (precision_given && !batch) {
        fprintf(stderr, "rnncc emit: error: --precision applies to --persistent N (the per-step unit is the same for every precision)\n");
        return CLI_USAGE_ERROR;
    }
    if ((tile.cluster || tile.warps || tile.chunk || tile.seqs || tile.handoff >= 0 || tile.split || tile.blocks ||
         tile.wregs || tile.waves) && !batch) {
        fprintf(stderr, "rnncc emit: error: --%s applies to --persistent N (the per-step unit has no tile)\n",
                tile.cluster ? "cluster" : tile.warps ? "warps" : tile.chunk ? "chunk" : tile.seqs ? "seqs"
                : tile.handoff >= 0 ? "handoff" : tile.split ? "split" : tile.blocks ? "blocks" : tile.wregs ? "wregs"
                : "waves");
        return CLI_USAGE_ERROR;
    }
    if (optind != argc - 1) {
        fprintf(stderr, "rnncc emit: error: expected exactly one input file (argument FILE)\n");
        return CLI_USAGE_ERROR;
    }
    if (!cli_output_apart("emit", out_path, argv[optind])) return CLI_USAGE_ERROR;
    char optbuf[256];
    if (arch && (ptx || cubin) && rt_nvrtc_options_text(ptx ? RT_NVRTC_PTX : RT_NVRTC_CUBIN, arch, optbuf, sizeof optbuf) < 0) {
        fprintf(stderr, "rnncc emit: error: invalid --arch '%s' (expected sm_XX%s, e.g. sm_90)\n", arch,
                ptx ? " or compute_XX" : "");
        return CLI_USAGE_ERROR;
    }
    char known[512];
    if (arch && !rt_nvrtc_arch_known(arch, known, sizeof known)) {
        fprintf(stderr, "rnncc emit: error: --arch %s: this NVRTC compiles for %s\n", arch, known);
        return CLI_USAGE_ERROR;
    }
    if (cubin && (!out_path || strcmp(out_path, "-") == 0) && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "rnncc emit: error: a CUBIN is binary; write it to a file with -o FILE\n");
        return CLI_USAGE_ERROR;
    }
    CliSource s;
    int status = cli_load(&s, argv[optind]);
    if (status == CLI_OK) {
        const IrCell *ic = ir_find_cell(s.module, cell);
        if (!ic && cell) {
            fprintf(stderr, "rnncc emit: error: no cell named '%s' in %s (option --cell)\n", cell, cli_source_name(s.path));
            status = CLI_USAGE_ERROR;
        } else if (!ic) {
            fprintf(stderr, "rnncc emit: error: %s defines %d cells; choose one with --cell NAME\n", cli_source_name(s.path),
                    s.module->ncells);
            status = CLI_USAGE_ERROR;
        } else {
            StrBuf out = {0};
            IrFold f;
            if (fold && (ic = cli_fold_cell(&s, "emit", ic, &f))) { /* what the fold did, as a comment line */
                StrBuf said = {0};
                ir_fold_describe(&f, ic, &said);
                const char *text = sb_str(&said);
                sb_printf(&out, "// %s", text[0] == '#' && text[1] == ' ' ? text + 2 : text);
                sb_free(&said);
            }
            /* compiled, a part is its own NVRTC program, as the runtime compiles it; printed, a slice of the whole */
            int parts = (ptx || cubin) && part ? (part == 'F' ? CG_UNIT_FORWARD : CG_UNIT_BACKWARD) : CG_UNIT_WHOLE;
            status = !ic ? CLI_INPUT_ERROR
                         : emit_cell(&s, ic, fold ? &f : NULL, dims, ndims, batch, part == 'B', parts, precision, &tile, &out);
            if (!arch) arch = tile.cluster > 1 ? "sm_90a" : "sm_90";
            else if (tile.cluster > 1 && (ptx || cubin) && arch[strlen(arch) - 1] != 'a')
                fprintf(stderr, "rnncc emit: note: the unit's clusters multicast their copies, a feature of "
                                "architecture-specific targets (sm_90a); --arch %s may compile it slower or not at all\n",
                        arch);
            if (status == CLI_OK && out.failed) {
                fprintf(stderr, "rnncc emit: error: out of memory\n");
                status = CLI_INPUT_ERROR;
            } else if (status == CLI_OK && (ptx || cubin)) {
                status = compile_and_write(sb_str(&out), ic->name, ptx ? RT_NVRTC_PTX : RT_NVRTC_CUBIN, arch, out_path);
            } else if (status == CLI_OK) {
                /* the backward kernels follow the marker line cg_emit_forward writes */
                const char *text = sb_str(&out), *mark = strstr(text, CG_BACKWARD_MARK);
                size_t len = out.len;
                if (batch) part = 0; /* a persistent unit is printed whole */
                if (part && !mark) {
                    fprintf(stderr, "rnncc emit: error: no backward section in the generated unit\n");
                    status = CLI_INPUT_ERROR;
                } else if (part == 'F') {
                    len = (size_t)(mark - text);
                } else if (part == 'B') {
                    len -= (size_t)(mark - text);
                    text = mark;
                }
                if (status == CLI_OK) status = cli_write_output(out_path, text, len);
            }
            sb_free(&out);
        }
    }
    cli_source_free(&s);
    return status;
}
