# free_ports.sh: sourced by the .t scripts that start tasks on TCP ports
# (slurm.t, mpirun.t). `free_ports COUNT` prints the first of COUNT
# consecutive ports nobody listens on, picked at random below Linux's
# ephemeral range (32768 up), so that no outgoing connection holds one
# either; it fails after 50 tries.
free_ports() {
    for _ in $(seq 50); do
        local base=$((20000 + RANDOM % 12000)) busy=0
        for port in $(seq "$base" $((base + $1 - 1))); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && busy=1
        done
        [ $busy = 0 ] && { echo "$base"; return 0; }
    done
    return 1
}
