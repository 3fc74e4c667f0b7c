//===- TileTypes.td - tile dialect types -------------------*- tablegen -*-===//

#ifndef KILN_DIALECT_TILE_IR_TILETYPES_TD
#define KILN_DIALECT_TILE_IR_TILETYPES_TD

include "kiln/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"

class Tile_TypeDef<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tile_PtrType : Tile_TypeDef<"Ptr", "ptr"> {
  let summary = "pointer to an element in global memory";
  let description = [{
    A 64-bit pointer into global memory whose pointee is a scalar integer or
    floating-point type. Tiles of pointers (`tensor<128x!tile.ptr<f32>>`) give
    every element of a tile its own address.

    ```mlir
    !tile.ptr<bf16>
    ```
    Lowers to `!llvm.ptr<1>` (address space 1, global).
  }];
  let parameters = (ins "::mlir::Type":$pointeeType);
  let assemblyFormat = "`<` $pointeeType `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tile_Float : AnyTypeOf<[F8E4M3FN, F8E5M2, F16, BF16, F32, F64], "floating-point">;
def Tile_Int : AnyTypeOf<[I1, I8, I16, I32, I64], "signless integer">;
def Tile_Ptr : Type<CPred<"::llvm::isa<::kiln::tile::PtrType>($_self)">, "tile pointer",
                    "::kiln::tile::PtrType">;
def Tile_Scalar : AnyTypeOf<[Tile_Float, Tile_Int, Tile_Ptr], "tile scalar">;

def Tile_FloatTensor : RankedTensorOf<[Tile_Float]>;
def Tile_IntTensor : RankedTensorOf<[Tile_Int]>;
def Tile_PtrTensor : RankedTensorOf<[Tile_Ptr]>;
def Tile_BoolTensor : RankedTensorOf<[I1]>;
def Tile_Tensor : RankedTensorOf<[Tile_Float, Tile_Int, Tile_Ptr]>;

def Tile_IntLike : AnyTypeOf<[Tile_Int, Tile_IntTensor]>;
def Tile_PtrLike : AnyTypeOf<[Tile_Ptr, Tile_PtrTensor]>;
def Tile_BoolLike : AnyTypeOf<[I1, Tile_BoolTensor]>;
def Tile_Any : AnyTypeOf<[Tile_Scalar, Tile_Tensor]>;

#endif // KILN_DIALECT_TILE_IR_TILETYPES_TD
