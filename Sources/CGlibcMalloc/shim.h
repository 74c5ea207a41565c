#ifndef CAREGATE_CGLIBCMALLOC_SHIM_H
#define CAREGATE_CGLIBCMALLOC_SHIM_H
/* glibc's malloc tuning (mallopt), which Swift's Glibc module does not bring in. */
#include <malloc.h>
#endif
