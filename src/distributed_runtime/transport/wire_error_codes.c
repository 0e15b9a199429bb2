/* wire_error_codes.c: what an ERROR frame's code means as flowlab's error
 * code, and back: a server sends a failed run's code on the wire, and the
 * client that reads it hands its caller the same fl_error_code, whichever
 * it is (the codes the wire names go by their names, the others as
 * CANONICAL + code). */
#include "wire.h"

fl_error_code fl_wire_error_meaning(fl_wire_error_code code)
{
    switch (code) {
    case FL_WIRE_E_BAD_FRAME: return FL_DATA_LOSS;
    case FL_WIRE_E_OUT_OF_ORDER: return FL_FAILED_PRECONDITION;
    case FL_WIRE_E_UNKNOWN_VARIABLE: return FL_NOT_FOUND;
    case FL_WIRE_E_MISMATCH: return FL_INVALID_ARGUMENT;
    case FL_WIRE_E_NOT_INITIALIZED: return FL_FAILED_PRECONDITION;
    case FL_WIRE_E_INTERNAL: return FL_INTERNAL;
    case FL_WIRE_E_INVALID_ARGUMENT: return FL_INVALID_ARGUMENT;
    case FL_WIRE_E_ABORTED: return FL_ABORTED;
    case FL_WIRE_E_UNAVAILABLE: return FL_UNAVAILABLE;
    case FL_WIRE_E_DEADLINE: return FL_DEADLINE_EXCEEDED;
    case FL_WIRE_E_UNAUTHENTICATED: return FL_UNAUTHENTICATED;
    case FL_WIRE_E_RESOURCE_EXHAUSTED: return FL_RESOURCE_EXHAUSTED;
    case FL_WIRE_E_CANONICAL: break;
    }
    if (code > FL_WIRE_E_CANONICAL && code <= FL_WIRE_E_CANONICAL + FL_UNAUTHENTICATED)
        return (fl_error_code)(code - FL_WIRE_E_CANONICAL);
    return FL_UNKNOWN;
}

bool fl_wire_error_code_known(unsigned code)
{
    return (code > 0 && code < FL_WIRE_ERROR_CODE_COUNT) ||
           (code > FL_WIRE_E_CANONICAL && code <= FL_WIRE_E_CANONICAL + FL_UNAUTHENTICATED);
}

fl_wire_error_code fl_wire_error_for(fl_error_code code)
{
    switch (code) {
    case FL_INVALID_ARGUMENT: return FL_WIRE_E_INVALID_ARGUMENT;
    case FL_ABORTED: return FL_WIRE_E_ABORTED;
    case FL_UNAVAILABLE: return FL_WIRE_E_UNAVAILABLE;
    case FL_DEADLINE_EXCEEDED: return FL_WIRE_E_DEADLINE;
    case FL_RESOURCE_EXHAUSTED: return FL_WIRE_E_RESOURCE_EXHAUSTED;
    case FL_UNAUTHENTICATED: return FL_WIRE_E_UNAUTHENTICATED;
    default: break;
    }
    /* NOT_FOUND, FAILED_PRECONDITION, UNIMPLEMENTED, ...: as they are, never
     * renamed to a near code (NOT_FOUND went out as INTERNAL) */
    if (code > FL_OK && code <= FL_UNAUTHENTICATED)
        return (fl_wire_error_code)(FL_WIRE_E_CANONICAL + code);
    return FL_WIRE_E_INTERNAL;
}
