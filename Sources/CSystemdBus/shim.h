#ifndef METERWISE_CSYSTEMDBUS_SHIM_H
#define METERWISE_CSYSTEMDBUS_SHIM_H

#include <systemd/sd-bus.h>

/* SD_BUS_ERROR_NULL is a macro; Swift gets it as a function. */
static inline sd_bus_error mw_bus_error_null(void) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    return error;
}

#endif
