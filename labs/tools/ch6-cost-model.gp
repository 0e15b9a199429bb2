# ch6-cost-model.gp: chapter 6's figure (make figures-06): the cost model's
# scaling efficiency from 2 to 512 workers on a 25 Gbit/s network, ring
# allreduce against parameter servers, with the published points it should
# explain. Tables from labs/tools/cost_model --csv, in dir; ch1_ms is the
# compute per step of chapter 1's model measured here, for its legend.
# gnuplot -e "dir='build/ch6'; ch1_ms='165.0'; out='book/figures/ch6-cost-model.svg'" labs/tools/ch6-cost-model.gp
set terminal svg size 820,500 font "sans,11" background rgb "white"
set termoption noenhanced
set output out
set datafile separator comma
set title "Predicted scaling efficiency on 25 Gbit/s links (alpha 25 us): ring allreduce vs parameter servers"
set xlabel "workers (one per link)"
set ylabel "scaling efficiency: throughput / (N x one worker's)"
set logscale x 2
set xrange [1.8:640]
set xtics (2, 4, 8, 16, 32, 64, 128, 256, 512)
set yrange [0:1.05]
set format y "%.0f%%"
set ytics ("0%%" 0, "25%%" 0.25, "50%%" 0.5, "75%%" 0.75, "100%%" 1)
set grid
set key bottom left Left reverse box opaque font ",10"
set style line 1 lc rgb "#3182bd" lw 2.5
set style line 2 lc rgb "#d62728" lw 2.5
set style line 3 lc rgb "#d62728" lw 2 dt 2
set style line 4 lc rgb "#31a354" lw 2
set style line 5 lc rgb "#31a354" lw 2 dt 2
set style line 6 lc rgb "#08519c" pt 7 ps 1.6
set style line 7 lc rgb "#08519c" pt 5 ps 1.4
set style line 8 lc rgb "#a50f15" pt 9 ps 1.8

# Published points (x, y): Horovod paper (Sergeev & Del Balso 2018), 128 GPUs
# on 25 GbE TCP, Inception V3 and ResNet-101: about 50% with TensorFlow's
# parameter servers, 88% with Horovod; Horovod's benchmark page, 512 GPUs
# (128 servers of 4 Pascal GPUs, RoCE 25 Gbit/s): 90%.
set label "TensorFlow ps, 128 GPUs: ~50%" at 128,0.5 offset -1,-1.3 right font ",10" tc rgb "#a50f15"
set label "Horovod, 128 GPUs: 88%" at 128,0.88 offset 1.2,-1.5 left font ",10" tc rgb "#08519c"
set label "Horovod, 512 GPUs: 90%" at 512,0.90 offset 1,1.1 right font ",10" tc rgb "#08519c"

plot dir.'/inception-ps8.csv' every ::2 using 1:4 with lines ls 1 \
         title "Inception V3 on P100s (95 MB, 451 ms): ring allreduce", \
     dir.'/inception-ps8.csv' every ::2 using 1:7 with lines ls 2 title "  same, 8 parameter-server shards", \
     dir.'/inception-ps32.csv' every ::2 using 1:7 with lines ls 3 title "  same, 32 shards", \
     dir.'/chapter1.csv' every ::2 using 1:4 with lines ls 4 \
         title sprintf("chapter 1's model (13 MB, %s ms per step measured here): ring", ch1_ms), \
     dir.'/chapter1.csv' every ::2 using 1:7 with lines ls 5 title "  same, 8 parameter-server shards", \
     '-' using 1:2 with points ls 8 title "published: TensorFlow parameter servers", \
     '-' using 1:2 with points ls 6 title "published: Horovod (paper, TCP)", \
     '-' using 1:2 with points ls 7 title "published: Horovod (benchmark page, RoCE)"
128,0.50
e
128,0.88
e
512,0.90
e
