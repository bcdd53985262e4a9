// A cheat: the reference solution, included. The build refuses it before linking.
// expect: exercise\.cpp includes \S*lessons/12_memory_and_scale/solution/exercise\.cpp, a reference solution
#include "lessons/12_memory_and_scale/solution/exercise.cpp"
