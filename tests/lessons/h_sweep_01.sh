#!/bin/sh
# h_sweep_01.sh LESSON_01: chapter 01's sweep of the finite-difference step, as its README
# runs it (one line per h: the max |autograd - finite differences|).
for h in 1e-2 1e-3 1e-4 1e-5 1e-6 1e-7 1e-8 1e-10 1e-12; do
  printf '%-6s' $h; "$1" --h $h | grep -o 'finite diff.: [0-9.e+-]*'
done
