// The TCP probes in one include: the data port server and the probes that run against it.
#pragma once

#include "probes/tcp_probes.hpp"
#include "probes/tcp_server.hpp"
