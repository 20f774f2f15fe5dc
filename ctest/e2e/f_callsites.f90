! Call sites (issue 22) in Fortran: MPI_SEND and MPI_RECV from known lines through the Fortran
! bindings (Open MPI's call PMPI directly, MPICH's call the C API: both must be attributed to
! these lines, through the Fortran entry). Totals over ranks in the SITE comments.
program f_callsites
  use mpi
  implicit none
  integer :: ierr, rank, i
  integer :: buf(16)
  integer :: status(MPI_STATUS_SIZE)
  buf = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  if (rank == 0) then
    do i = 1, 2
      call MPI_SEND(buf, 2, MPI_INTEGER, 1, 0, MPI_COMM_WORLD, ierr) ! SITE MPI_Send calls=2 sent=16
    end do
    call MPI_SEND(buf, 4, MPI_INTEGER, 1, 0, MPI_COMM_WORLD, ierr) ! SITE MPI_Send calls=1 sent=16
  else if (rank == 1) then
    do i = 1, 3
      call MPI_RECV(buf, 16, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, status, ierr) ! SITE MPI_Recv calls=3 recv=32
    end do
  end if
  call MPI_FINALIZE(ierr)
  if (rank == 0) print '(a)', 'f_callsites: ok'
end program f_callsites
