#include "CQueueDataShims.h"

QD_TLS const void *_Nullable qd_tls_confinement = 0;
QD_TLS const void *_Nullable qd_tls_confinement_frames = 0;
QD_TLS qd_construction qd_tls_construction = {0};
