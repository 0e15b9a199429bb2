# ch7-bubble.gp: chapter 7's figure (make figures-07): the idle fraction of
# each device of the 2-stage pipeline, measured from the traces of real runs
# with M = 1, 2, 4, 8 micro-batches, beside GPipe's bubble (S-1)/(M+S-1).
# The devices are PoCL pthread devices that share one pool of two worker
# threads (POCL_MAX_PTHREAD_COUNT=2): not one core each.
# Table from labs/07-model-parallel/trace_report --csv: M,formula,gpu0,gpu1,mean.
# gnuplot -e "csv='book/figures/ch7-bubble.csv'; out='book/figures/ch7-bubble.svg'" labs/tools/ch7-bubble.gp
set terminal svg size 760,440 font "sans,11" background rgb "white"
set termoption noenhanced
set output out
set datafile separator comma
set title "Idle time of a 2-stage pipeline on two PoCL devices sharing a pool of two worker threads"
set xlabel "micro-batches M"
set ylabel "fraction of the traced steps a device was idle"
set logscale x 2
set xrange [0.8:10]
set xtics (1, 2, 4, 8)
set yrange [0:1]
set ytics ("0%%" 0, "25%%" 0.25, "50%%" 0.5, "75%%" 0.75, "100%%" 1)
set grid
set key top right box opaque font ",10"
set style line 1 lc rgb "#000000" lw 2.5 dt 2 pt 6 ps 1.3
set style line 2 lc rgb "#3182bd" lw 2 pt 7 ps 1.3
set style line 3 lc rgb "#d62728" lw 2 pt 5 ps 1.3
set style line 4 lc rgb "#31a354" lw 2.5 pt 9 ps 1.5
plot csv every ::1 using 1:2 with linespoints ls 1 title "GPipe's bubble (S-1)/(M+S-1), equal stages", \
     csv every ::1 using 1:3 with linespoints ls 2 title "measured: /gpu:0 (convolutions)", \
     csv every ::1 using 1:4 with linespoints ls 3 title "measured: /gpu:1 (dense layers)", \
     csv every ::1 using 1:5 with linespoints ls 4 title "measured: mean of the two"
