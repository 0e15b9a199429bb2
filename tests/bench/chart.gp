# chart.gp: draws `make bench`'s ratios as bars (flowlab / baseline).
# gnuplot -e "csv='build/bench/results.csv'; out='book/figures/bench.svg'" tests/bench/chart.gp
set datafile separator ","
set terminal svg size 900,520 font "sans,11" background rgb "white"
set output out
set termoption noenhanced
set title "flowlab / baseline, measured side by side by make bench (> 1: flowlab faster)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -40 left font ",9"
set ylabel "ratio"
set grid ytics
set key off
set yrange [0:*]
plot csv using (stringcolumn(1) eq "breakdown" ? NaN : $7):xtic(stringcolumn(1) eq "breakdown" ? "" : sprintf("%s vs %s", stringcolumn(2), stringcolumn(5))) every ::1 linecolor rgb "#4a7ab5"
