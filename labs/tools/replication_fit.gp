# replication_fit.gp: chapter 3's extrapolation (make figures-replication):
# the in-graph client's costs across tasks, measured for 1 to 8 workers
# (points, from ingraph_vs_between.sh) and fitted to a line in N
# (replication_fit.sh), drawn out to 1,000 workers on log-log axes.
# gnuplot -e "csv='ch3-replication.csv'; fitted='fitted.csv'; out='ch3-extrapolation.svg'" labs/tools/replication_fit.gp
set terminal svg size 1400,420 font "sans,11" background rgb "white"
set termoption noenhanced
set datafile separator ","
set output out
set grid
set key below
set xlabel "worker tasks (N)"
set logscale xy
set xrange [0.8:1300]
set xtics ("1" 1, "8" 8, "100" 100, "1000" 1000)
set arrow from 100, graph 0 to 100, graph 1 nohead dt 3 lc rgb "#636363"
set arrow from 1000, graph 0 to 1000, graph 1 nohead dt 3 lc rgb "#636363"
across = sprintf("< awk -F, '$1 == \"in-graph-across-tasks\"' %s", csv)
set multiplot layout 1,4 title "The in-graph client's costs, measured to 8 workers and fitted to a line in N"
set title "nodes in the client's graph"
plot across using 2:3 with points pt 7 lc rgb "#d62728" title "measured", \
     fitted using 1:2 with lines lw 2 lc rgb "#d62728" title "fitted", \
     141 with lines dt 2 lc rgb "#3182bd" title "a between-graph worker's"
set title "build + setup (s)"
plot across using 2:($5 + $6) with points pt 7 lc rgb "#d62728" title "measured", \
     fitted using 1:3 with lines lw 2 lc rgb "#d62728" title "fitted"
set title "client CPU ms per step"
plot across using 2:7 with points pt 7 lc rgb "#d62728" title "measured", \
     fitted using 1:4 with lines lw 2 lc rgb "#d62728" title "fitted"
set title "MB per step through the client"
plot across using 2:($8 / 1e6) with points pt 7 lc rgb "#d62728" title "measured", \
     fitted using 1:5 with lines lw 2 lc rgb "#d62728" title "fitted"
unset multiplot
