// The probe result types and their names live in daemon/model/probe.{hpp,cpp}; this unit
// stays so the probes library keeps one home for result helpers.
#include "probes/result.hpp"
