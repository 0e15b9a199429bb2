# chart.gp: `make bench`'s comparisons, one bar group per measurement group.
# Middle: flowlab / baseline on a log axis (the 1x line: as fast as the
# baseline); right: the absolute figures each ratio came from. Rows with no
# ratio (the machine's figures, the breakdown) are left out.
# gnuplot -e "csv='build/bench/results.csv'; out='book/figures/bench.svg'" tests/bench/chart.gp
set datafile separator comma
set terminal svg size 1000,800 font "sans,11" background rgb "white"
set output out
set termoption noenhanced

# Columns (tests/bench/bench_csv.h): 1 group, 2 what, 3 label, 4 unit,
# 5 flowlab, 6 baseline, 7 baseline_value, 8 ratio, 9 ratio_low, 10 ratio_high
# (a row measured in rounds: its bar is the medians' ratio, its label the
# range of the per-round ratios).
has_ratio(r) = strlen(strcol(6)) > 0 && r > 0
# A row's place from the top: rows in order, a gap (and a heading) before each group.
place(r) = has_ratio(r) ? (first = strcol(1) ne prev, y = y + 1 + (first ? 1.1 : 0), prev = strcol(1), y) : NaN
group_colour(g) = g eq "sgemm" ? 0x4a7ab5 : g eq "conv2d" ? 0xd98c2b : g eq "training" ? 0x5aa05a : 0x9b59b6
heading(g) = g eq "sgemm" ? "GEMM: flowlab's matmul on /gpu:0" : g eq "conv2d" ? "convolutions: flowlab on /gpu:0" : \
             g eq "training" ? "training steps of chapter 1" : \
             g eq "scaling" ? "scaling over devices and processes: chapters 2, 3, 4, 6 and 7" : g

y = 0; prev = ""; first = 0
stats csv using (place($8)) every ::1 nooutput
rows = y + 0.7
set multiplot title "flowlab / baseline, measured side by side by make bench (right of 1x: flowlab is faster)"
set yrange [rows:0]
unset ytics
set key off
set tmargin 3; set bmargin 3
set border 0
unset xtics

# ---- left: what each bar compares, and each group's heading ----
set lmargin at screen 0.01; set rmargin at screen 0.31
set xrange [0:1]
y = 0; prev = ""
plot csv using (1):(place($8)):(sprintf("%s vs %s", strcol(3), strcol(6))) every ::1 with labels right font ",9", \
     y = 0, prev = "", \
     csv using (0):(place($8), first ? y - 1.05 : NaN):(heading(strcol(1))) every ::1 with labels left font ",10"

# ---- middle: the ratio of each comparison ----
set lmargin at screen 0.32; set rmargin at screen 0.72
set border 1
set logscale x 2
set xrange [0.25:32]
set xtics ("1/4x" 0.25, "1/2x" 0.5, "1x" 1, "2x" 2, "4x" 4, "8x" 8, "16x" 16, "32x" 32) nomirror
set grid xtics
set arrow 1 from 1, graph 0 to 1, graph 1 nohead linewidth 2 linecolor rgb "#222222" front
set style fill solid 0.85 border -1
y = 0; prev = ""
plot csv using ($8):(place($8)):(($8) < 1 ? $8 : 1):(($8) < 1 ? 1 : $8):(y - 0.38):(y + 0.38):(group_colour(strcol(1))) \
         every ::1 with boxxyerror linecolor rgb variable, \
     y = 0, prev = "", \
     csv using (($8) < 1 ? 1 : $8):(place($8)):(strlen(strcol(9)) > 0 ? sprintf(" %.2f-%.2fx", $9, $10) : \
                                                  sprintf(" %.2fx", $8)) every ::1 with labels left font ",8"

# ---- right: the absolute figures ----
unset logscale x; unset arrow 1; unset grid; unset xtics
set border 0
set lmargin at screen 0.73; set rmargin at screen 0.99
set xrange [0:1]
y = 0; prev = ""
plot csv using (0.02):(place($8)):(sprintf("%.1f vs %.1f %s", $5, $7, strcol(4))) every ::1 \
     with labels left font ",8" textcolor rgb "#333333"
unset multiplot
