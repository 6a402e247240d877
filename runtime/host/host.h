/* host.h: what the host driver's two halves share (driver.c: devices, contexts, memory;
 * module.c: modules and launches by the interpreter). */
#ifndef TILERT_HOST_H
#define TILERT_HOST_H

#include <stdbool.h>
#include <stddef.h>

/* The bytes from p to the end of the device allocation holding it; 0 when none holds it. */
size_t host_allocation(const void *p);

#endif
