# ch4-progress.gp: chapter 4's two charts from real runs (make figures-04):
# the global step over time and the loss by global step, synchronous beside
# asynchronous, one line per worker. Tables from labs/tools/progress_table.sh.
# gnuplot -e "sync='s.txt'; async='a.txt'; steps='steps.svg'; losses='loss.svg'" labs/tools/ch4-progress.gp
set terminal svg size 760,420 font "sans,11" background rgb "white"
set termoption noenhanced
set grid
set key top left
set style line 1 lc rgb "#3182bd" lw 2
set style line 2 lc rgb "#9ecae1" lw 2 dt 2
set style line 3 lc rgb "#d62728" lw 2
set style line 4 lc rgb "#fc9272" lw 2 dt 2

set output steps
set title "The global step over time: 1 ps and 2 workers on two cores"
set xlabel "seconds since the worker's first step (added up from its images/sec)"
set ylabel "global step"
plot sync index 0 using 2:3 with lines ls 1 title "synchronous, worker 0", \
     sync index 1 using 2:3 with lines ls 2 title "synchronous, worker 1", \
     async index 0 using 2:3 with lines ls 3 title "asynchronous, worker 0", \
     async index 1 using 2:3 with lines ls 4 title "asynchronous, worker 1"

set output losses
set title "Each worker's training loss by global step"
set xlabel "global step"
set ylabel "loss on the worker's own batch"
set key top right
plot sync index 0 using 3:4 with lines ls 1 title "synchronous, worker 0", \
     sync index 1 using 3:4 with lines ls 2 title "synchronous, worker 1", \
     async index 0 using 3:4 with lines ls 3 title "asynchronous, worker 0", \
     async index 1 using 3:4 with lines ls 4 title "asynchronous, worker 1"
