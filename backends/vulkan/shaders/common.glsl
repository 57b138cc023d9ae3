// Shared helpers for the mnnpy Vulkan shaders (included, never compiled alone).
// A tensor is described by (C, area): C == 0 means a plain row-major buffer (NCHW / NHWC / linear);
// C > 0 means NC4HW4, laid out as [N][ceil(C/4)][area][4] for the logical shape (N, C, area).

int phys_index(int i, int c, int area) {
    if (c == 0) {
        return i;
    }
    int chw = c * area;
    int n = i / chw;
    int r = i - n * chw;
    int ch = r / area;
    int s = r - ch * area;
    int c4 = (c + 3) / 4;
    return ((n * c4 + ch / 4) * area + s) * 4 + (ch & 3);
}

int grid_stride() {
    return int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
}
