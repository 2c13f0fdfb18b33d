// What one probe run between this node and a peer produced: the value every probe returns.
//
// The types themselves are plain model types (daemon/model/probe.hpp), so the snapshot, the
// rules and the API can hold results without linking the probes.
#pragma once

#include "model/probe.hpp"
