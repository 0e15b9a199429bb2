# lr-scaling.gp: chapter 2's learning-rate chart from real runs (make
# figures-lr): the training loss by epochs seen, one line per setting.
# Tables from labs/tools/lr-scaling.sh.
# gnuplot -e "dir='build/lr'; out='lr-scaling.svg'" labs/tools/lr-scaling.gp
set terminal svg size 760,420 font "sans,11" background rgb "white"
set termoption noenhanced
set grid
set key top right
set output out
set title "Linear scaling and warm-up: 2 epochs of 8192 Fashion-MNIST images"
set xlabel "epochs seen"
set ylabel "loss on the step's own batch"
set yrange [0:2.5]
plot dir."/batch64-lr0.001.txt" using 1:2 with lines lw 2 lc rgb "#636363" title "batch 64, rate 0.001", \
     dir."/batch512-lr0.001.txt" using 1:2 with lines lw 2 lc rgb "#9ecae1" dt 2 title "batch 512, rate 0.001", \
     dir."/batch512-lr0.008.txt" using 1:2 with lines lw 2 lc rgb "#d62728" title "batch 512, rate 0.008 (x8)", \
     dir."/batch512-lr0.008-warmup.txt" using 1:2 with lines lw 2 lc rgb "#3182bd" title "batch 512, rate 0.008, warm-up over 8 steps"
