#ifndef CQUEUEDATA_SHIMS_H
#define CQUEUEDATA_SHIMS_H

#include <stdint.h>

// Thread-local state for QueueData. Swift cannot declare thread-local variables, and
// pthread_getspecific costs a library call; these are plain TLS loads once inlined.

/// The confinement token of the innermost context block running on this thread.
extern _Thread_local const void *_Nullable qd_tls_confinement;
/// The innermost frame of the chain of context blocks entered on this thread.
extern _Thread_local const void *_Nullable qd_tls_confinement_frames;
/// The next attribute slot handed out while a managed object is being constructed.
extern _Thread_local intptr_t qd_tls_attribute_slot;
/// The next relationship slot handed out while a managed object is being constructed.
extern _Thread_local intptr_t qd_tls_relationship_slot;
/// The next transient attribute slot handed out while a managed object is being constructed
/// (transient slots follow the row's persistent columns).
extern _Thread_local intptr_t qd_tls_transient_slot;
/// The recorder collecting attribute declarations while a model discovers a class.
extern _Thread_local void *_Nullable qd_tls_attribute_recorder;

static inline const void *_Nullable qd_confinement_current(void) {
    return qd_tls_confinement;
}

static inline void qd_confinement_set_current(const void *_Nullable token) {
    qd_tls_confinement = token;
}

static inline const void *_Nullable qd_confinement_frames(void) {
    return qd_tls_confinement_frames;
}

static inline void qd_confinement_set_frames(const void *_Nullable frames) {
    qd_tls_confinement_frames = frames;
}

static inline intptr_t qd_attribute_slot_take(void) {
    return qd_tls_attribute_slot++;
}

static inline intptr_t qd_attribute_slot_get(void) {
    return qd_tls_attribute_slot;
}

static inline void qd_attribute_slot_set(intptr_t slot) {
    qd_tls_attribute_slot = slot;
}

static inline intptr_t qd_relationship_slot_take(void) {
    return qd_tls_relationship_slot++;
}

static inline intptr_t qd_relationship_slot_get(void) {
    return qd_tls_relationship_slot;
}

static inline void qd_relationship_slot_set(intptr_t slot) {
    qd_tls_relationship_slot = slot;
}

static inline intptr_t qd_transient_slot_take(void) {
    return qd_tls_transient_slot++;
}

static inline intptr_t qd_transient_slot_get(void) {
    return qd_tls_transient_slot;
}

static inline void qd_transient_slot_set(intptr_t slot) {
    qd_tls_transient_slot = slot;
}

static inline void *_Nullable qd_attribute_recorder_get(void) {
    return qd_tls_attribute_recorder;
}

static inline void qd_attribute_recorder_set(void *_Nullable recorder) {
    qd_tls_attribute_recorder = recorder;
}

#endif

#ifndef CQUEUEDATA_CRC32C_H
#define CQUEUEDATA_CRC32C_H
#include <stddef.h>

/// Extends a CRC-32C (Castagnoli) over `length` bytes: pass 0 to start. Uses the SSE 4.2
/// instruction when the CPU has it, and a slicing-by-8 table otherwise.
uint32_t qd_crc32c_extend(uint32_t crc, const void *_Nonnull data, size_t length);

#endif
