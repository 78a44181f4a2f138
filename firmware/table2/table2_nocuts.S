; table2_nocuts.S — no cut copies: linked in place of the generated table2_cuts.S (same section, last in
; .text) into table2.pass1.elf, the build whose adpcm_coder bytes `pintime cfg --cut-copies` copies
; (TABLE2.md §6). That ELF is never run.

        .section .text.table2_cuts, "ax", @progbits
        .global table2_cut_copies
        .type   table2_cut_copies, @function
table2_cut_copies:
        .global table2_cut_count
        .set    table2_cut_count, 0
        .global table2_cut_stride
        .set    table2_cut_stride, 0
