# ch6-links.gp: chapter 6's figure of the real-links measurement (make
# figures-links): for each link rate, images/sec against N workers for one
# ps, two sharded ps, ring allreduce and in-graph across tasks (the median
# of the runs, bars from the lowest to the highest), the cost model's
# prediction dashed; below, the busiest link's MB per step at the first rate.
# CSV from labs/tools/links_sweep.sh (its columns: rate, config, workers, ...).
# gnuplot -e "csv='build/links/links.csv'; out='book/figures/ch6-links.svg'" labs/tools/ch6-links.gp
set terminal svg size 900,820 font "sans,11" background rgb "white"
set termoption noenhanced
set output out
set datafile separator comma
set multiplot layout 3,1
set grid
set xrange [0.7:4.6]
set xtics (1, 2, 4)
set key outside right top Left reverse font ",10"
set style line 1 lc rgb "#d62728" lw 2 pt 7
set style line 2 lc rgb "#ff7f0e" lw 2 pt 5
set style line 3 lc rgb "#3182bd" lw 2 pt 9
set style line 4 lc rgb "#31a354" lw 2 pt 11
configs = "ps1 ps2 ring ingraph"
names = "'1 ps' '2 ps, dense_1 in 2 parts' 'ring allreduce' 'in-graph across tasks'"
# rows(rate, config): the CSV's rows of one rate and configuration, in order of N
rows(r, c) = sprintf("< awk -F, '$1 == \"%s\" && $2 == \"%s\"' %s", r, c, csv)

do for [rate in "1gbit 10gbit"] {
    set title sprintf("images/sec on %s links (median and range of the runs; dashed: the cost model)", rate)
    set ylabel "images/sec"
    set xlabel "workers"
    set yrange [0:*]
    plot for [k=1:4] rows(rate, word(configs, k)) using 3:4:5:6 with yerrorlines ls k title word(names, k), \
         for [k=1:4] rows(rate, word(configs, k)) using 3:13 with lines ls k dt 2 notitle
}
set title "the busiest link's MB per step on 1gbit links (each way, the larger direction)"
set ylabel "MB per step"
set yrange [0:*]
plot for [k=1:4] rows("1gbit", word(configs, k)) using 3:10 with linespoints ls k title word(names, k)
unset multiplot
