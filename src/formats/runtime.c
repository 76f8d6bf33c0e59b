/* PLACEHOLDER: shared merge/reduce for vrt/tri/sph, being written. */
