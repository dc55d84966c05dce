// store/ must not use the daemon.
#pragma once
#include "daemon/daemon.h"
