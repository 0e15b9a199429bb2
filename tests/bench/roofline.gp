# roofline.gp: this machine's roofline with flowlab's kernels on it, each
# kernel a numbered point named in the key beside the chart. Kernels of the
# same intensity (one shape, three passes) put their numbers side by side.
# gnuplot -e "points='build/bench/roofline.csv'; peak=P; bw=B; out='book/figures/roofline.svg'" tests/bench/roofline.gp
set datafile separator comma
# The kernels' count and highest rate, read before any range is set (stats
# leaves out what falls outside the current ranges).
stats points using 3 nooutput name "Y"
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
# Up to twice the peak, or higher where a kernel is credited with more than
# that (Winograd's convolutions are counted as the direct sum they replace,
# so they can stand above the roof): every point stays on the chart.
set yrange [1:(Y_max * 1.5 > 2 * peak ? Y_max * 1.5 : 2 * peak)]
set grid
set key top left font ",9"
roof(x) = (bw * x < peak) ? bw * x : peak
# Each number sits just right of its point, at its point's height. A point
# at the previous one's intensity and about its height (within 15%) moves its
# number one digit further right, so the numbers of a cluster read as a row
# beside it instead of floating away.
k = 0; prevx = 0; prevy = 0
near(x, y) = x == prevx && abs(log10(y / prevy)) < 0.06
beside(x, y) = (k = (near(x, y) ? k + 1 : 0), prevx = x, prevy = y, x * 10 ** (0.035 + 0.065 * k))
plot roof(x) title "roof: min(peak, bandwidth x intensity)" linewidth 2 linecolor rgb "#444444", \
     points using 2:3 with points pointtype 7 pointsize 0.8 linecolor rgb "#4a7ab5" notitle, \
     k = 0, prevx = 0, prevy = 1, \
     points using (beside($2, $3)):3:(sprintf("%d", $0 + 1)) with labels left font ",9" textcolor rgb "#1d3f6e" notitle

# ---- right: the key to the numbers ----
unset logscale; unset grid; unset xlabel; unset ylabel
set border 0
unset xtics; unset ytics
set lmargin at screen 0.72; set rmargin at screen 0.99
set xrange [0:1]
set yrange [Y_records + 1:0]
plot points using (0):($0 + 1):(sprintf("%2d  %s", $0 + 1, strcol(1))) with labels left font ",10" notitle
unset multiplot
