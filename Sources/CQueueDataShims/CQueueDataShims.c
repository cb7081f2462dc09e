#include "CQueueDataShims.h"

_Thread_local const void *_Nullable qd_tls_confinement = 0;
_Thread_local const void *_Nullable qd_tls_confinement_frames = 0;
_Thread_local qd_construction qd_tls_construction = {0};
