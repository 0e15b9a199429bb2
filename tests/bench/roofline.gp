# roofline.gp: this machine's roofline with flowlab's kernels on it, each
# kernel a numbered point named in the key beside the chart. Kernels of the
# same intensity (one shape, three passes) put their numbers side by side.
# gnuplot -e "points='build/bench/roofline.csv'; peak=P; bw=B; out='book/figures/roofline.svg'" tests/bench/roofline.gp
set datafile separator comma
set terminal svg size 1000,560 font "sans,11" background rgb "white"
set output out
set termoption noenhanced
set multiplot title sprintf("Roofline: %.0f GB/s memory, %.0f GFLOP/s GEMM peak (measured by make bench)", bw, peak)

# ---- left: the roof and the kernels ----
set lmargin at screen 0.08; set rmargin at screen 0.70
set tmargin 3; set bmargin 4
set logscale xy
set xlabel "arithmetic intensity (FLOP per byte moved)"
set ylabel "GFLOP/s (flowlab on /gpu:0)"
set xrange [0.1:1000]
set yrange [1:2*peak]
set grid
set key top left font ",9"
roof(x) = (bw * x < peak) ? bw * x : peak
# The k-th point in a row at one intensity has its number k places to the right.
k = 0; prevx = 0
beside(x) = (k = (x == prevx ? k + 1 : 0), prevx = x, x * 10 ** (0.05 + 0.11 * k))
plot roof(x) title "roof: min(peak, bandwidth x intensity)" linewidth 2 linecolor rgb "#444444", \
     points using 2:3 with points pointtype 7 pointsize 0.8 linecolor rgb "#4a7ab5" notitle, \
     k = 0, prevx = 0, \
     points using (beside($2)):3:(sprintf("%d", $0 + 1)) with labels left font ",9" textcolor rgb "#1d3f6e" notitle

# ---- right: the key to the numbers ----
unset logscale; unset grid; unset xlabel; unset ylabel
set border 0
unset xtics; unset ytics
set lmargin at screen 0.72; set rmargin at screen 0.99
set xrange [0:1]
stats points using 2 nooutput
set yrange [STATS_records + 1:0]
plot points using (0):($0 + 1):(sprintf("%2d  %s", $0 + 1, strcol(1))) with labels left font ",10" notitle
unset multiplot
