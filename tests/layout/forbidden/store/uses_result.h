#pragma once
// Every folder may include core/result.h.
#include "core/result.h"
