# replication.gp: chapter 3's figure from real runs (make figures-replication):
# in-graph replication across tasks against between-graph on the same tasks,
# and in-graph in one process, for N = 1, 2, 4, 8 workers: images/sec, the
# client's graph, its CPU time and the bytes through it per step. The
# images/sec are drawn as the band between the lowest and highest of the
# repeated runs; each plot's key sits below it, off the data.
# CSV from labs/tools/ingraph_vs_between.sh.
# gnuplot -e "csv='build/replication/replication.csv'; out='ch3-replication.svg'" labs/tools/replication.gp
set terminal svg size 1400,460 font "sans,11" background rgb "white"
set termoption noenhanced
set datafile separator ","
set output out
set grid
set key below
set xlabel "worker tasks (N)"
set logscale x 2
set xtics ("1" 1, "2" 2, "4" 4, "8" 8)
set xrange [0.8:10]
mode(m) = sprintf("< awk -F, '$1 == \"%s\"' %s", m, csv)
set multiplot layout 1,4 title "In-graph across tasks against between-graph (the labs' CNN, 2 cores)"
set title "images/sec, all workers together (lowest to highest of the runs)"
set yrange [0:*]
plot mode("between-graph") using 2:9:10 with filledcurves fs transparent solid 0.25 lc rgb "#3182bd" notitle, \
     mode("between-graph") using 2:(($9 + $10) / 2) with linespoints lw 2 lc rgb "#3182bd" title "between-graph", \
     mode("in-graph-across-tasks") using 2:9:10 with filledcurves fs transparent solid 0.25 lc rgb "#d62728" notitle, \
     mode("in-graph-across-tasks") using 2:(($9 + $10) / 2) with linespoints lw 2 lc rgb "#d62728" title "in-graph across tasks", \
     mode("in-graph-one-process") using 2:9:10 with filledcurves fs transparent solid 0.25 lc rgb "#636363" notitle, \
     mode("in-graph-one-process") using 2:(($9 + $10) / 2) with linespoints lw 2 dt 2 lc rgb "#636363" title "in-graph, one process"
set title "nodes in the client's graph"
plot mode("between-graph") using 2:3 with linespoints lw 2 lc rgb "#3182bd" title "between-graph (each worker)", \
     mode("in-graph-across-tasks") using 2:3 with linespoints lw 2 lc rgb "#d62728" title "in-graph across tasks", \
     mode("in-graph-one-process") using 2:3 with linespoints lw 2 dt 2 lc rgb "#636363" title "in-graph, one process"
set title "client CPU ms per step (log scale)"
set logscale y
set yrange [*:*]
plot mode("between-graph") using 2:7 with linespoints lw 2 lc rgb "#3182bd" title "between-graph (each worker)", \
     mode("in-graph-across-tasks") using 2:7 with linespoints lw 2 lc rgb "#d62728" title "in-graph across tasks"
set title "MB per step through the client (log scale)"
plot mode("between-graph") using 2:($8 / 1e6) with linespoints lw 2 lc rgb "#3182bd" title "between-graph (each worker)", \
     mode("in-graph-across-tasks") using 2:($8 / 1e6) with linespoints lw 2 lc rgb "#d62728" title "in-graph across tasks"
unset multiplot
