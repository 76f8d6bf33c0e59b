/* PLACEHOLDER */ typedef int mfs_placeholder_frame;
