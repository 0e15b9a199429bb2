# roofline.gp: this machine's roofline with flowlab's kernels on it.
# gnuplot -e "points='build/bench/roofline.csv'; peak=P; bw=B; out='book/figures/roofline.svg'" tests/bench/roofline.gp
set datafile separator ","
set terminal svg size 900,560 font "sans,11" background rgb "white"
set output out
set termoption noenhanced
set title sprintf("Roofline: %.0f GB/s memory, %.0f GFLOP/s GEMM peak (measured by make bench)", bw, peak)
set logscale xy
set xlabel "arithmetic intensity (FLOP per byte moved)"
set ylabel "GFLOP/s (flowlab on PoCL)"
set xrange [0.1:1000]
set yrange [1:2*peak]
set grid
set key bottom right font ",9"
roof(x) = (bw * x < peak) ? bw * x : peak
plot roof(x) title "roof: min(peak, bandwidth x intensity)" linewidth 2 linecolor rgb "#444444", \
     points using 2:3:(stringcolumn(1)) with labels point pointtype 7 offset char 1,0.5 left font ",8" notitle
