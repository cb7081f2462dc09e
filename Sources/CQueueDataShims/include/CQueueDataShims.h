#ifndef CQUEUEDATA_SHIMS_H
#define CQUEUEDATA_SHIMS_H

#include <stdint.h>

// Thread-local state for QueueData. Swift cannot declare thread-local variables, and
// pthread_getspecific costs a library call; these are plain TLS loads once inlined.
//
// The initial-exec model makes each access one load relative to the thread pointer, where the
// default model for code that may end up in a shared library calls __tls_get_addr. It needs the
// variables in the executable or in a library loaded at startup (SwiftPM links QueueData
// statically into executables and test bundles); a library opened with dlopen after startup
// gets them from the static TLS surplus glibc keeps for that purpose.
#define QD_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/// The confinement token of the innermost context block running on this thread.
extern QD_TLS const void *_Nullable qd_tls_confinement;
/// The innermost frame of the chain of context blocks entered on this thread.
extern QD_TLS const void *_Nullable qd_tls_confinement_frames;
/// What the attribute and relationship wrappers of an object under construction on this thread
/// read: one thread-local structure, so that a wrapper's initializer finds it with one
/// thread-local address computation.
typedef struct qd_construction {
    /// The recorder collecting attribute declarations while a model discovers a class.
    void *_Nullable recorder;
    /// The next attribute slot handed out.
    intptr_t attribute_slot;
    /// The next relationship slot handed out.
    intptr_t relationship_slot;
    /// The next transient attribute slot handed out (transient slots follow the row's
    /// persistent columns).
    intptr_t transient_slot;
    /// The byte offset of each slot's field in the object's row (its entity's row layout), or
    /// null when no object is being constructed; `field_count` entries.
    const uint16_t *_Nullable field_offsets;
    intptr_t field_count;
} qd_construction;

extern QD_TLS qd_construction qd_tls_construction;

/// `pure`: it reads memory and writes none, so Swift code that calls it (inlined into every
/// attribute accessor) need not keep the objects it holds retained around the call.
__attribute__((pure)) static inline const void *_Nullable qd_confinement_current(void) {
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

/// The dispatch queue whose block the calling thread runs (the innermost one), or a global queue
/// outside any block: libdispatch's `dispatch_get_current_queue`, a thread-local read.
const void *_Nullable qd_current_dispatch_queue(void);

/// The construction state of this thread.
static inline qd_construction qd_construction_get(void) {
    return qd_tls_construction;
}

static inline void qd_construction_set(qd_construction state) {
    qd_tls_construction = state;
}

/// Starts handing out the slots of an object whose fields are at `offsets` (`count` slots), the
/// transient ones from `first_transient_slot`; returns the state to restore afterwards.
static inline qd_construction qd_construction_begin(
    const uint16_t *_Nullable offsets, intptr_t count, intptr_t first_transient_slot) {
    qd_construction *state = &qd_tls_construction;
    qd_construction saved = *state;
    state->attribute_slot = 0;
    state->relationship_slot = 0;
    state->transient_slot = first_transient_slot;
    state->field_offsets = offsets;
    state->field_count = count;
    return saved;
}

/// The next slot of the object under construction (a transient one, or a persistent one),
/// taken, with its field's byte offset in the object's row: `slot | offset << 16`; or -1,
/// taking nothing, while a model records this thread's declarations.
static inline intptr_t qd_attribute_field_take(_Bool transient) {
    qd_construction *state = &qd_tls_construction;
    if (state->recorder) {
        return -1;
    }
    intptr_t slot = transient ? state->transient_slot++ : state->attribute_slot++;
    intptr_t offset = state->field_offsets && slot < state->field_count ? state->field_offsets[slot] : 0;
    return slot | offset << 16;
}

/// The byte offset of `slot`'s field in the row of the object under construction (0 when no
/// object is being constructed, or the slot is not one of its entity's: a class that declares
/// more attributes than its entity traps once its initializer reaches ManagedObject's).
static inline intptr_t qd_field_offset(intptr_t slot) {
    qd_construction *state = &qd_tls_construction;
    return state->field_offsets && slot >= 0 && slot < state->field_count ? state->field_offsets[slot] : 0;
}

static inline intptr_t qd_attribute_slot_take(void) {
    return qd_tls_construction.attribute_slot++;
}

static inline intptr_t qd_attribute_slot_get(void) {
    return qd_tls_construction.attribute_slot;
}

static inline intptr_t qd_relationship_slot_take(void) {
    return qd_tls_construction.relationship_slot++;
}

static inline intptr_t qd_relationship_slot_get(void) {
    return qd_tls_construction.relationship_slot;
}

static inline intptr_t qd_transient_slot_take(void) {
    return qd_tls_construction.transient_slot++;
}

static inline intptr_t qd_transient_slot_get(void) {
    return qd_tls_construction.transient_slot;
}

static inline void *_Nullable qd_attribute_recorder_get(void) {
    return qd_tls_construction.recorder;
}

static inline void qd_attribute_recorder_set(void *_Nullable recorder) {
    qd_tls_construction.recorder = recorder;
}

#endif

#ifndef CQUEUEDATA_CRC32C_H
#define CQUEUEDATA_CRC32C_H
#include <stddef.h>

/// Extends a CRC-32C (Castagnoli) over `length` bytes: pass 0 to start. Uses the SSE 4.2
/// instruction when the CPU has it, and a slicing-by-8 table otherwise.
uint32_t qd_crc32c_extend(uint32_t crc, const void *_Nonnull data, size_t length);

#endif
