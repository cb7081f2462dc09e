// glibc's heap statistics (mallinfo2) and malloc_trim, which Swift's Glibc module leaves out:
// the memory workload (P10) reads them.
#include <malloc.h>
