/* PLACEHOLDER: reader being written. */
typedef int mfs_placeholder_gmf;
