#include <pvm3.h>
