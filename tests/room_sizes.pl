#!/usr/bin/perl
# room_sizes.pl: the lines each room of the tree holds beside its budget in
# tests/line_budgets.txt (make size prints the table; tests/house_rules.t
# runs it with --check, which fails past a budget or for a room without one).
# A room is a folder's own source files, not its subfolders': src/, src/io/,
# cl/, labs/03-between-graph/ and so on. A room of src/ split into sub-rooms
# (src/distributed_runtime/transport/, ...) has a budget for each and one for
# the whole, which counts its own files and all its sub-rooms'.
use strict;
use warnings;

my $budgets_file = 'tests/line_budgets.txt';
my $check = grep { $_ eq '--check' } @ARGV;
my @source = qw(c h cl cu cuh t pl py sh mk);

sub lines_in {
    my ($folder) = @_;
    my $n = 0;
    for my $path (grep { -f } glob("$folder/*")) {
        next unless $path =~ /\.(\w+)$/ && grep { $_ eq $1 } @source;
        open(my $fh, '<', $path) or die "room_sizes.pl: cannot read $path: $!\n";
        $n++ while defined(my $line = <$fh>);
        close $fh;
    }
    return $n;
}

# A folder of src/ with sub-rooms counts them all (its budget is the whole's).
sub room_lines {
    my ($room) = @_;
    my $n = lines_in($room);
    $n += lines_in($_) for ($room =~ m{^src/[^/]+$} ? map { s{/$}{}r } glob("$room/*/") : ());
    return $n;
}

my (%budget, %why);
open(my $fh, '<', $budgets_file) or die "room_sizes.pl: cannot read $budgets_file: $!\n";
while (<$fh>) {
    next if /^\s*(#|$)/;
    my ($room, $lines, $reason) = /^(\S+)\s+(\d+)\s*(.*?)\s*$/
      or die "$budgets_file:$.: expected 'room lines [why]', got: $_";
    ($budget{$room}, $why{$room}) = ($lines, $reason);
}
close $fh;

my @rooms = grep { room_lines($_) > 0 } map { s{/$}{}r } ('src', glob('src/*/'), glob('src/*/*/'), 'cl', 'cuda', glob('labs/*/'), 'tests', glob('tests/*/'));
my @problems;
printf "%-34s %7s %7s  %s\n", 'room', 'lines', 'budget', 'why the budget is what it is';
for my $room (@rooms) {
    my $n = room_lines($room);
    my $b = $budget{$room};
    push @problems, "$room has no budget in $budgets_file ($n lines)" unless defined $b;
    push @problems, "$room holds $n lines, over its budget of $b: raise it in $budgets_file with a line saying why"
      if defined $b && $n > $b;
    printf "%-34s %7d %7s  %s\n", $room, $n, $b // '-', $why{$room} // '';
}
print "# $_\n" for @problems;
exit(($check && @problems) ? 1 : 0);
