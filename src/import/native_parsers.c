/* The implementations of the two single-header parsers the native import
 * path uses, compiled once here: cgltf 1.14 and fast_obj 1.3 from Debian's
 * meshoptimizer source package (scripts/fetch-meshoptimizer; their headers
 * are system includes, so their own warnings stay theirs). */
#define CGLTF_IMPLEMENTATION
#include <cgltf.h>

#define FAST_OBJ_IMPLEMENTATION
#include <fast_obj.h>
