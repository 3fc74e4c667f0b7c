// RUN: kiln-opt %s -split-input-file -kiln-tile-vectorize-access -verify-diagnostics

// expected-error @+1 {{kiln-tile-vectorize-access needs the layout attributes of kiln-tile-assign-layout}}
func.func @no_layout(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %v = tile.load %x : !tile.ptr<f32>
  return
}

// -----

// expected-error @+1 {{kiln-tile-vectorize-access needs the layout attributes of kiln-tile-assign-layout}}
func.func @threads_only(%x: !tile.ptr<f32>) attributes {tile.kernel, tile.threads_per_block = 128 : i32} {
  %v = tile.load %x : !tile.ptr<f32>
  return
}
