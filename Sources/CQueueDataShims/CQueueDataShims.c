#include "CQueueDataShims.h"

QD_TLS const void *_Nullable qd_tls_confinement = 0;
QD_TLS const void *_Nullable qd_tls_confinement_frames = 0;
QD_TLS qd_construction qd_tls_construction = {0};

// Declared here rather than through <dispatch/dispatch.h>, which a C target of the package does
// not see. Deprecated there as a way to decide what to do; QueueData only compares its result
// with a queue it holds, as a faster way to confirm what `dispatch_get_specific` would.
extern void *dispatch_get_current_queue(void);

const void *_Nullable qd_current_dispatch_queue(void) {
    return dispatch_get_current_queue();
}
