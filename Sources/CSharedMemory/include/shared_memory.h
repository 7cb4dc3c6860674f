/*
 * CSharedMemory: memory another process can map by its descriptor (memfd), for pixel buffers a
 * plugin's worker process (isolation=process) reads with no copy. C: memfd_create and the sealing
 * constants are not visible to Swift's Glibc module.
 */
#ifndef CSHAREDMEMORY_H
#define CSHAREDMEMORY_H

#include <stddef.h>

/* A memfd of `size` bytes, close-on-exec, its size sealed (it can neither shrink under a mapping
 * nor grow), or -errno. */
int cvhost_shared_memory_create(const char *name, size_t size);

/* Seals future writes: mappings made from now on (a worker's) can only read, while mappings made
 * before (cvhost's own) still write. 0 or -errno. */
int cvhost_shared_memory_seal_writes(int fd);

#endif
