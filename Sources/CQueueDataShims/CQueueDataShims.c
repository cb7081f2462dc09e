#include "CQueueDataShims.h"

_Thread_local const void *_Nullable qd_tls_confinement = 0;
_Thread_local const void *_Nullable qd_tls_confinement_frames = 0;
_Thread_local intptr_t qd_tls_attribute_slot = 0;
_Thread_local intptr_t qd_tls_relationship_slot = 0;
_Thread_local intptr_t qd_tls_transient_slot = 0;
_Thread_local void *_Nullable qd_tls_attribute_recorder = 0;
